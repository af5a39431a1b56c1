import ArgumentParser
import Wire

struct OfflineList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "Every offlined product (offline.list).")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "Only this state: queued, downloading, paused, cached, failed, deleted, …") var filter: String?
    @Option(help: "requestedAt, -requestedAt, productId or state.") var sort: String?

    func run() async throws {
        var params: [String: JSONValue] = [:]
        if let filter { params["filter"] = .string(filter) }
        if let sort { params["sort"] = .string(sort) }
        let result = try await CtlClient.call(connection, .downloader, "offline.list", .object(params), json: output.json)
        CtlOutput.show(result, json: output.json) { Offline.render($0["items"]?.arrayValue ?? []) }
    }
}

struct OfflineState: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "state", abstract: "NOT_OFFLINED, OFFLINED_AND_VALID or OFFLINED_BUT_NOT_VALID for a product (offline.state).")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "Product id.") var productId: String

    func run() async throws {
        let result = try await CtlClient.call(connection, .downloader, "offline.state", ["productId": .string(productId)], json: output.json)
        CtlOutput.show(result, json: output.json) { "\(Format.text($0["productId"]))  \(Format.text($0["state"]))" }
    }
}

struct OfflineDeleteAll: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete-all", abstract: "Remove every offlined product; stations are kept (offline.deleteAll).")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let result = try await CtlClient.call(connection, .downloader, "offline.deleteAll", json: output.json)
        CtlOutput.show(result, json: output.json) { "deleted \(Format.text($0["deleted"])) offline product(s)" }
    }
}

struct OfflineEstimate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "estimate", abstract: "Bytes an offline would need and bytes free (offline.estimate).")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "Product id.") var productId: String
    @Option(help: "Quality, as for offline add (default: the policy's, by the product's type).") var quality: String?

    func run() async throws {
        var params: [String: JSONValue] = ["productId": .string(productId)]
        if let quality { params["quality"] = .string(quality) }
        let result = try await CtlClient.call(connection, .downloader, "offline.estimate", .object(params), json: output.json)
        CtlOutput.show(result, json: output.json, render: KeyValues.render)
    }
}

struct OfflineVariants: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "variants", abstract: "The variants and renditions an HLS product offers (offline.variants).")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "Product id, e.g. vid-1.") var productId: String

    func run() async throws {
        let result = try await CtlClient.call(connection, .downloader, "offline.variants", ["productId": .string(productId)], json: output.json)
        CtlOutput.show(result, json: output.json) { Self.render($0) }
    }

    static func render(_ offer: JSONValue) -> String {
        var variants = Table(headers: ["BANDWIDTH", "RESOLUTION", "CODECS", "VIDEO"])
        for variant in offer["variants"]?.arrayValue ?? [] {
            variants.add([
                Format.text(variant["bandwidth"]), Format.text(variant["resolution"]), Format.text(variant["codecs"]),
                variant["hasVideo"]?.boolValue == true ? "yes" : "no",
            ])
        }
        var renditions = Table(headers: ["TYPE", "LANGUAGE", "NAME", "DEFAULT"])
        for rendition in offer["renditions"]?.arrayValue ?? [] {
            renditions.add([
                Format.text(rendition["type"]), Format.text(rendition["language"]), Format.text(rendition["name"]),
                rendition["default"]?.boolValue == true ? "yes" : "no",
            ])
        }
        return variants.render() + "\n" + renditions.render()
    }
}
