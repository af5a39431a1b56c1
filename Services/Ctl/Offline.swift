import ArgumentParser
import Foundation
import Wire

/// `cassettectl offline …`: the `offline.*` methods — single media products kept on the device.
struct Offline: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Offline single media products (offline.*).",
        subcommands: [OfflineAdd.self, OfflineStatus.self, OfflineList.self, OfflineState.self,
                      OfflineToken.Pause.self, OfflineToken.Resume.self, OfflineToken.Cancel.self, OfflineToken.Delete.self,
                      OfflineDeleteAll.self, OfflineEstimate.self, OfflinePreloadLicense.self, OfflineRenewLicense.self])

    /// The table of `offline.status`/`offline.list` entries.
    static func render(_ items: [JSONValue]) -> String {
        guard !items.isEmpty else { return "no offline products" }
        var table = Table(headers: ["TOKEN", "PRODUCT", "STATE", "PROGRESS", "SIZE", "VALID UNTIL", "LICENSE", "ERROR"])
        for item in items {
            var product = Format.text(item["productId"])
            if let requested = item["requestedProductId"]?.stringValue, requested != item["productId"]?.stringValue {
                product = "\(requested)→\(product)"
            }
            let error = [item["error"], item["reason"], item["revalidationError"]].compactMap { $0?.stringValue }
                .joined(separator: ": ")
            var license = "-"
            if let held = item["license"] {
                license = held["expiresAt"]?.stringValue.map { "\(Format.text(held["kind"])) until \($0)" } ?? Format.text(held["kind"])
            }
            table.add([Format.text(item["token"]), product, Format.text(item["state"]),
                       item["progress"]?.doubleValue.map { "\(Int($0))%" } ?? "-",
                       Format.bytes(item["sizeBytes"]?.doubleValue), Format.text(item["offlineValidUntil"]), license,
                       error.isEmpty ? "-" : error])
        }
        return table.render()
    }
}

struct OfflineAdd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Offline one media product (offline.add); --wait shows its progress until it is on the device.",
        discussion: "With --wait: exit status 2 when the offline failed, 75 when --wait-timeout passed.")

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var waitOptions: WaitOptions
    @OptionGroup var terms: LicenseOptions

    @Argument(help: "Product id, e.g. tr-1.")
    var productId: String

    @Option(name: .customLong("type"), help: "Product type (default TRACK).")
    var productType: String?

    @Option(help: "Audio quality (default HIGH).")
    var quality: String?

    @Flag(help: "Wait until the product is on the device (or failed).")
    var wait = false

    static let finished: Set<String> = ["cached", "failed", "deleted"]

    func run() async throws {
        let connection = try await Connection.open(self.connection, .downloader, json: output.json)
        defer { Task { await connection.close() } }
        if wait { try await connection.subscribe(["downloads"]) }
        var params: [String: JSONValue] = ["productId": .string(productId)]
        if let productType { params["productType"] = .string(productType) }
        if let quality { params["quality"] = .string(quality) }
        terms.add(to: &params)
        var status = try await connection.call("offline.add", .object(params))
        if wait, let token = status["token"]?.stringValue, !Self.finished.contains(status["state"]?.stringValue ?? "") {
            let bar = ProgressBar(label: productId, disabled: waitOptions.noProgress)
            bar.update(fraction: (status["progress"]?.doubleValue ?? 0) / 100, detail: "")
            var ended = false
            let outcome = await EventWait.run(connection, timeout: waitOptions.waitTimeout) { event in
                guard event.topic == "downloads", event.data["token"]?.stringValue == token else { return false }
                switch event.type {
                case "OfflineProgress":
                    let size = event.data["sizeBytes"]?.doubleValue
                    bar.update(fraction: (event.data["progress"]?.doubleValue ?? 0) / 100,
                               detail: "\(Format.bytes(event.data["bytesOnDisk"]?.doubleValue)) of \(Format.bytes(size))")
                    return false
                case "OfflineDone", "OfflineFailed", "OfflineDeleted":
                    if event.type == "OfflineDone" { bar.update(fraction: 1, detail: "done") }
                    ended = true
                    return true
                default:
                    return false
                }
            }
            bar.finish()
            if outcome != .done { throw EventWait.fail(outcome, service: .downloader, what: "the offline of \(productId)") }
            if ended { status = try await connection.call("offline.status", ["token": .string(token)]) }
        }
        CtlOutput.show(status, json: output.json) { Offline.render([$0]) }
        if wait && status["state"]?.stringValue != "cached" {
            CtlOutput.error("the offline of \(productId) ended \(Format.text(status["state"])): \(Format.text(status["error"])) \(Format.text(status["reason"]))")
            throw ExitCode(ExitStatus.workFailed)
        }
    }
}

struct OfflineStatus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "One offline's state and progress (offline.status).")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "The token offline add printed.") var token: String

    func run() async throws {
        let result = try await CtlClient.call(connection, .downloader, "offline.status", ["token": .string(token)], json: output.json)
        CtlOutput.show(result, json: output.json) { Offline.render([$0]) }
    }
}

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

/// pause, resume, cancel and delete: one token in, the offline's status out.
enum OfflineToken {
    static func run(_ method: String, _ connection: ConnectionOptions, _ output: OutputOptions, _ token: String) async throws {
        let result = try await CtlClient.call(connection, .downloader, method, ["token": .string(token)], json: output.json)
        CtlOutput.show(result, json: output.json) { Offline.render([$0]) }
    }

    struct Pause: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "pause", abstract: "Pause a download; it resumes where it stopped (offline.pause).")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions
        @Argument(help: "Token.") var token: String
        func run() async throws { try await OfflineToken.run("offline.pause", connection, output, token) }
    }
    struct Resume: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "resume", abstract: "Resume a paused or failed offline (offline.resume).")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions
        @Argument(help: "Token.") var token: String
        func run() async throws { try await OfflineToken.run("offline.resume", connection, output, token) }
    }
    struct Cancel: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "cancel", abstract: "Cancel an offline that is not finished (offline.cancel).")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions
        @Argument(help: "Token.") var token: String
        func run() async throws { try await OfflineToken.run("offline.cancel", connection, output, token) }
    }
    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "delete", abstract: "Remove an offlined product from the device (offline.delete).")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions
        @Argument(help: "Token.") var token: String
        func run() async throws { try await OfflineToken.run("offline.delete", connection, output, token) }
    }
}

struct OfflineDeleteAll: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "delete-all", abstract: "Remove every offlined product; stations are kept (offline.deleteAll).")
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
    @Option(help: "Audio quality.") var quality: String?

    func run() async throws {
        var params: [String: JSONValue] = ["productId": .string(productId)]
        if let quality { params["quality"] = .string(quality) }
        let result = try await CtlClient.call(connection, .downloader, "offline.estimate", .object(params), json: output.json)
        CtlOutput.show(result, json: output.json, render: KeyValues.render)
    }
}
