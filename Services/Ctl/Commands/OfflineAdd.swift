import ArgumentParser
import Wire

/// `cassettectl offline add <product> [--wait]`: `offline.add`, then optionally follows the
/// download to its end (`OfflineFollow`).
struct OfflineAdd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Offline one media product (offline.add); --wait shows its progress until it is on the device.",
        discussion: """
            With --wait: a bar with bytes, rate and ETA on a terminal, and why it waits (cellular not \
            allowed, no network, outside the download windows, cache full, origin failing); exit status 2 when the offline failed, \
            75 when --wait-timeout passed. For a video already offlined, --audio-language and \
            --subtitle-language add those renditions to it (the same token; it stays playable meanwhile).
            """)

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var waitOptions: WaitOptions
    @OptionGroup var terms: LicenseOptions

    @Argument(help: "Product id, e.g. tr-1.")
    var productId: String

    @Option(name: .customLong("type"), help: "Product type, TRACK or VIDEO (default: what the origin says it is).")
    var productType: String?

    @Option(
        help: ArgumentHelp(
            "Quality: LOW, HIGH, LOSSLESS or HI_RES_LOSSLESS for a track; AUDIO_ONLY, LOW, MEDIUM or HIGH for a video.",
            discussion: "Default: the policy's offlineAudioQuality for a track, offlineVideoQuality for a video."))
    var quality: String?

    @Flag(help: "Download this product over cellular or metered networks even where the policy forbids it.")
    var allowCellular = false

    @Flag(help: "Download this product now, also outside the policy's download windows.")
    var now = false

    @Option(help: "HLS: the variant whose bandwidth is closest at or below this many bits per second (offline variants lists them).")
    var bitrate: Int?

    @Option(name: .customLong("audio-language"), help: "HLS: an audio rendition by language, e.g. fr; repeatable.")
    var audioLanguages: [String] = []

    @Option(name: .customLong("subtitle-language"), help: "HLS: a subtitle rendition by language, e.g. en; repeatable.")
    var subtitleLanguages: [String] = []

    @Option(help: "The name shown for this download (default: the product's title).")
    var displayName: String?

    @Option(help: "The app's own id for this offline, carried back in every event of it.")
    var referenceId: String?

    @Flag(help: "Wait until the product is on the device (or failed).")
    var wait = false

    func run() async throws {
        let connection = try await Connection.open(self.connection, .downloader, json: output.json)
        defer { Task { await connection.close() } }
        if wait { try await connection.subscribe(["downloads"]) }
        var params: [String: JSONValue] = ["productId": .string(productId)]
        if let productType { params["productType"] = .string(productType) }
        if let quality { params["quality"] = .string(quality) }
        if allowCellular { params["allowCellular"] = true }
        if now { params["now"] = true }
        if let bitrate { params["bitrate"] = .number(Double(bitrate)) }
        if !audioLanguages.isEmpty { params["audioLanguages"] = .array(audioLanguages.map(JSONValue.string)) }
        if !subtitleLanguages.isEmpty { params["subtitleLanguages"] = .array(subtitleLanguages.map(JSONValue.string)) }
        if let displayName { params["displayName"] = .string(displayName) }
        if let referenceId { params["referenceId"] = .string(referenceId) }
        terms.add(to: &params)
        var status = try await connection.call("offline.add", .object(params))
        if wait { status = try await OfflineFollow.follow(connection, status: status, label: productId, wait: waitOptions) }
        CtlOutput.show(status, json: output.json) { Offline.render([$0]) }
        if wait { try OfflineFollow.check(status, label: productId, json: output.json) }
    }
}

/// `cassettectl offline watch <token|product>`: follows an offline already under way.
struct OfflineWatch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Follow an offline under way until it is on the device (or failed), with its progress bar.",
        discussion: "Exit status 0 once cached, 2 when it ended failed or deleted, 75 when --wait-timeout passed.")

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var waitOptions: WaitOptions
    @OptionGroup var target: OfflineArgument

    func run() async throws {
        let connection = try await Connection.open(self.connection, .downloader, json: output.json)
        defer { Task { await connection.close() } }
        let token = try await OfflineRef.token(target.offline, on: connection)
        try await connection.subscribe(["downloads"])
        var status = try await connection.call("offline.status", ["token": .string(token)])
        let label = status["requestedProductId"]?.stringValue ?? target.offline
        status = try await OfflineFollow.follow(connection, status: status, label: label, wait: waitOptions)
        CtlOutput.show(status, json: output.json) { Offline.render([$0]) }
        try OfflineFollow.check(status, label: label, json: output.json)
    }
}
