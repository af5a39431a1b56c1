import ArgumentParser
import Wire

/// `cassettectl network get|set`: the network as the downloader sees it, and an override.
struct Network: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the network as the downloader sees it, or override it (network.get, network.set).",
        subcommands: [Get.self, Set.self])

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show the network as the downloader sees it.")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let result = try await CtlClient.call(connection, .downloader, "network.get", json: output.json)
            CtlOutput.show(result, json: output.json, render: KeyValues.render)
        }
    }

    enum Kind: String, CaseIterable, ExpressibleByArgument { case wifi, ethernet, cellular, none, auto }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Override the detected network (auto clears the override).")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions
        @Argument(help: "wifi, ethernet, cellular, none or auto.") var type: Kind
        @Option(help: ArgumentHelp("Whether the connection is metered: yes or no.", valueName: "yes|no")) var metered: BooleanArgument?

        func run() async throws {
            var params: [String: JSONValue] = ["type": .string(type.rawValue)]
            if let metered { params["metered"] = .bool(metered.value) }
            let result = try await CtlClient.call(connection, .downloader, "network.set", .object(params), json: output.json)
            CtlOutput.show(result, json: output.json, render: KeyValues.render)
        }
    }
}

/// `cassettectl sync-now`: extend expirations and re-validate now.
struct SyncNow: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync-now",
        abstract: "Extend expirations and re-validate offline content now, instead of at the next 6-hourly run (sync.now).")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let result = try await CtlClient.call(connection, .downloader, "sync.now", json: output.json)
        CtlOutput.show(result, json: output.json, render: KeyValues.render)
    }
}
