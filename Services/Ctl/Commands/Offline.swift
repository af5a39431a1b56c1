import ArgumentParser
import Wire

/// `cassettectl offline …`: the `offline.*` methods — single media products kept on the device.
/// An offline is named by its token or, where exactly one offline has it, by its product id.
struct Offline: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Offline single media products (offline.*).",
        discussion: "Wherever a token is asked for, a product id does too when exactly one offline has it (requested or actual).",
        subcommands: [
            OfflineAdd.self, OfflineWatch.self, OfflineStatus.self, OfflineList.self, OfflineState.self,
            OfflineToken.Pause.self, OfflineToken.Resume.self, OfflineToken.Cancel.self, OfflineToken.Delete.self,
            OfflineDeleteAll.self, OfflineEstimate.self, OfflinePreloadLicense.self, OfflineRenewLicense.self,
            OfflineVariants.self,
        ])

    /// The table of `offline.status`/`offline.list` entries.
    static func render(_ items: [JSONValue]) -> String {
        guard !items.isEmpty else { return "no offline products" }
        var table = Table(headers: ["TOKEN", "PRODUCT", "NAME", "STATE", "PROGRESS", "SIZE", "VALID UNTIL", "LICENSE", "ERROR"])
        for item in items {
            var product = Format.text(item["productId"])
            if let requested = item["requestedProductId"]?.stringValue, requested != item["productId"]?.stringValue {
                product = "\(requested)→\(product)"
            }
            let error = [item["error"], item["reason"], item["revalidationError"]].compactMap { $0?.stringValue }
                .joined(separator: ": ")
            var license = "-"
            if let held = item["license"] {
                license = held["expiresAt"]?.stringValue.map { "\(Format.text(held["kind"])) until \(HumanTime.date($0))" } ?? Format.text(held["kind"])
            }
            table.add([
                Format.text(item["token"]), product, Format.text(item["displayName"]), Format.text(item["state"]),
                item["progress"]?.doubleValue.map { "\(Int($0))%" } ?? "-",
                Format.bytes(item["sizeBytes"]?.doubleValue), Format.date(item["offlineValidUntil"]), license,
                error.isEmpty ? "-" : error,
            ])
        }
        return table.render()
    }
}

/// The argument of the commands that act on one offline.
struct OfflineArgument: ParsableArguments {
    @Argument(help: ArgumentHelp("The token `offline add` printed, or the product id when one offline has it.", valueName: "token|product"))
    var offline: String
}

struct OfflineStatus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "One offline's state and progress (offline.status).")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var target: OfflineArgument

    func run() async throws {
        try await OfflineToken.run("offline.status", connection, output, target.offline)
    }
}

/// status, pause, resume, cancel and delete: one offline in, its status out.
enum OfflineToken {
    static func run(_ method: String, _ options: ConnectionOptions, _ output: OutputOptions, _ offline: String) async throws {
        let connection = try await Connection.open(options, .downloader, json: output.json)
        defer { Task { await connection.close() } }
        let token = try await OfflineRef.token(offline, on: connection)
        let result = try await connection.call(method, ["token": .string(token)])
        CtlOutput.show(result, json: output.json) { Offline.render([$0]) }
    }

    struct Pause: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "pause", abstract: "Pause a download; it resumes where it stopped (offline.pause).")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions
        @OptionGroup var target: OfflineArgument
        func run() async throws { try await OfflineToken.run("offline.pause", connection, output, target.offline) }
    }
    struct Resume: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "resume", abstract: "Resume a paused or failed offline (offline.resume).")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions
        @OptionGroup var target: OfflineArgument
        func run() async throws { try await OfflineToken.run("offline.resume", connection, output, target.offline) }
    }
    struct Cancel: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "cancel", abstract: "Cancel an offline that is not finished (offline.cancel).")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions
        @OptionGroup var target: OfflineArgument
        func run() async throws { try await OfflineToken.run("offline.cancel", connection, output, target.offline) }
    }
    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "delete", abstract: "Remove an offlined product from the device (offline.delete).")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions
        @OptionGroup var target: OfflineArgument
        func run() async throws { try await OfflineToken.run("offline.delete", connection, output, target.offline) }
    }
}
