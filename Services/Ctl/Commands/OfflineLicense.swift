import ArgumentParser
import Wire

/// License terms on the command line: `--rental-seconds N` or `--purchase` (offline.add,
/// offline.preloadLicense, offline.renewLicense). The service checks them; both at once is its
/// -32602, so the message names the field the same way for every client.
struct LicenseOptions: ParsableArguments {
    @Option(help: "Ask for a rental license of this many seconds; its clock starts now.")
    var rentalSeconds: Int?

    @Flag(help: "Ask for a purchase license (it never expires).")
    var purchase = false

    func add(to params: inout [String: JSONValue]) {
        if let rentalSeconds { params["rentalSeconds"] = .number(Double(rentalSeconds)) }
        if purchase { params["purchase"] = true }
    }
}

/// `cassettectl offline preload-license PRODUCT`: a license before the content (Brightcove).
struct OfflinePreloadLicense: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "preload-license",
        abstract: "Get a product's license before downloading it (offline.preloadLicense); offline add downloads it later.")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var terms: LicenseOptions
    @Argument(help: "Product id.") var productId: String

    func run() async throws {
        var params: [String: JSONValue] = ["productId": .string(productId)]
        terms.add(to: &params)
        let result = try await CtlClient.call(connection, .downloader, "offline.preloadLicense", .object(params), json: output.json)
        CtlOutput.show(result, json: output.json) { Offline.render([$0]) }
    }
}

/// `cassettectl offline renew-license <token|product>`: a new license, nothing downloaded again.
struct OfflineRenewLicense: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "renew-license",
        abstract: "Renew an offline's license without downloading it again (offline.renewLicense); same terms unless given.")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var terms: LicenseOptions
    @OptionGroup var target: OfflineArgument

    func run() async throws {
        let connection = try await Connection.open(self.connection, .downloader, json: output.json)
        defer { Task { await connection.close() } }
        var params: [String: JSONValue] = ["token": .string(try await OfflineRef.token(target.offline, on: connection))]
        terms.add(to: &params)
        let result = try await connection.call("offline.renewLicense", .object(params))
        CtlOutput.show(result, json: output.json) { Offline.render([$0]) }
    }
}
