import ArgumentParser
import Wire

/// `cassettectl metrics [service]`: a service's OpenMetrics text, as node_exporter would read it.
struct Metrics: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a service's metrics (OpenMetrics text).",
        discussion: "The text service.metrics returns, ending '# EOF'. Without a service, each of the three in turn.")

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: "The service to ask (default: all three, one after the other).")
    var service: ServiceName?

    func run() async throws {
        var texts: [String: JSONValue] = [:]
        for service in service.map({ [$0] }) ?? ServiceName.allCases {
            let link = try await Connection.open(connection, service, json: output.json)
            defer { Task { await link.close() } }
            let text = try await link.call("service.metrics")["text"]?.stringValue ?? ""
            texts[service.rawValue] = .string(text)
            if !output.json { print(text, terminator: "") }
        }
        if output.json { print(CtlOutput.pretty(.object(texts))) }
    }
}
