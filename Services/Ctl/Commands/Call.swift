import ArgumentParser
import Wire

/// `cassettectl call <service> <method> [json-params]`: any method, raw JSON out.
struct Call: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Call any method and print its JSON result.",
        discussion: """
            The result is printed as JSON whether or not --json is given; with --json a failure is \
            also printed as JSON, {"error":{"code","name","message",…}}. Exit status: 0 on a result, \
            1 when the service answered with an error (its message on stderr), 69 when the service \
            cannot be reached, 64 on bad usage.
            """)

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: "downloader, player or reporter.")
    var service: ServiceName

    @Argument(help: "Method name, e.g. service.status.")
    var method: String

    @Argument(help: "Params as a JSON object, e.g. '{\"stationId\":\"st-9\"}'.")
    var params: String?

    func validate() throws {
        if let params, Self.parse(params) == nil {
            throw ValidationError("params must be a JSON object, e.g. '{\"key\":\"value\"}'.")
        }
    }

    static func parse(_ text: String) -> JSONValue? {
        guard let parsed = try? JSONCoding.parse(Array(text.utf8)), case .object = parsed else { return nil }
        return parsed
    }

    func run() async throws {
        let value = params.flatMap(Self.parse) ?? .object([:])
        let result = try await CtlClient.call(connection, service, method, value, json: output.json)
        print(CtlOutput.pretty(result))
    }
}
