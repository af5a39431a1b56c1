import ArgumentParser
import Wire

/// `cassettectl policy get|set`: the downloader's download policy.
struct Policy: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show or change the download policy (policy.get, policy.set).",
        subcommands: [Get.self, Set.self])

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show the download policy.")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let result = try await CtlClient.call(connection, .downloader, "policy.get", json: output.json)
            CtlOutput.show(result, json: output.json, render: KeyValues.render)
        }
    }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change the download policy; only the keys given change.",
            discussion: "Example: cassettectl policy set --max-parallel 2 --allow-cellular false")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions
        @Option(help: "Files downloaded at once (1…32).") var maxParallel: Int?
        @Option(help: "Download over cellular networks: true or false.") var allowCellular: Bool?
        @Option(help: "Most bytes the offline content may use.") var maxCacheBytes: Int64?
        @Option(help: "Bytes to leave free on the disk.") var minFreeBytes: Int64?
        @Option(name: .customLong("set"), help: ArgumentHelp("Any other key, as key=JSON (e.g. --set wifiOnly=true).", valueName: "key=value"))
        var extra: [String] = []

        func run() async throws {
            var params: [String: JSONValue] = [:]
            if let maxParallel { params["maxParallel"] = .number(Double(maxParallel)) }
            if let allowCellular { params["allowCellular"] = .bool(allowCellular) }
            if let maxCacheBytes { params["maxCacheBytes"] = .number(Double(maxCacheBytes)) }
            if let minFreeBytes { params["minFreeBytes"] = .number(Double(minFreeBytes)) }
            for pair in extra {
                let (key, value) = try KeyValueArgument.parse(pair)
                params[key] = value
            }
            guard !params.isEmpty else { throw ValidationError("Give at least one setting to change, e.g. --max-parallel 2.") }
            let result = try await CtlClient.call(connection, .downloader, "policy.set", .object(params), json: output.json)
            CtlOutput.show(result, json: output.json, render: KeyValues.render)
            // A downloader that predates a key ignores it; say so rather than let it look applied.
            let ignored = params.keys.filter { result[$0] == nil }.sorted()
            if !ignored.isEmpty {
                CtlOutput.error("the downloader did not apply \(ignored.joined(separator: ", ")) (not in its answer: it does not know the key yet).")
            }
        }
    }
}

/// `key=value` arguments: the value is JSON when it parses as JSON, else a string.
enum KeyValueArgument {
    static func parse(_ text: String) throws -> (String, JSONValue) {
        guard let eq = text.firstIndex(of: "="), eq != text.startIndex else {
            throw ValidationError("'\(text)' is not key=value.")
        }
        let key = String(text[..<eq]), raw = String(text[text.index(after: eq)...])
        let value = (try? JSONCoding.parse(Array(raw.utf8))) ?? .string(raw)
        return (key, value)
    }
}

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
        @Option(help: "Whether the connection is metered: true or false.") var metered: Bool?

        func run() async throws {
            var params: [String: JSONValue] = ["type": .string(type.rawValue)]
            if let metered { params["metered"] = .bool(metered) }
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
