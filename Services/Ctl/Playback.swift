import ArgumentParser
import Wire

/// The player's transport controls. They return as soon as the player accepted the request
/// (what happens next arrives as `player` events: `cassettectl watch player`).
enum Playback {
    static func send(_ connection: ConnectionOptions, _ output: OutputOptions, _ method: String,
                     _ params: JSONValue = .object([:]), done: String) async throws {
        let result = try await CtlClient.call(connection, .player, method, params, json: output.json)
        CtlOutput.show(result, json: output.json) { _ in done }
    }

    static func product(_ id: String, type: String?) -> JSONValue {
        ["productId": .string(id), "productType": .string(type ?? "TRACK")]
    }
}

struct Tune: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Play an offline station (station.tune).")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "Station id, e.g. st-9.") var stationId: String

    func run() async throws {
        try await Playback.send(connection, output, "station.tune", ["stationId": .string(stationId)], done: "tuned to \(stationId)")
    }
}

struct Skip: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Skip to the station's next item (station.skip).")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    func run() async throws { try await Playback.send(connection, output, "station.skip", done: "skipped") }
}

struct Load: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Load a media product for playback (player.load); --play starts it.")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "Product id, e.g. tr-1.") var productId: String
    @Option(name: .customLong("type"), help: "Product type (default TRACK).") var productType: String?
    @Flag(help: "Start playing once loaded (player.play).") var play = false

    func run() async throws {
        let connection = try await Connection.open(self.connection, .player, json: output.json)
        defer { Task { await connection.close() } }
        var result = try await connection.call("player.load", ["mediaProduct": Playback.product(productId, type: productType)])
        if play { result = try await connection.call("player.play") }
        CtlOutput.show(result, json: output.json) { _ in "loaded \(productId)" + (play ? ", playing" : "") }
    }
}

struct Queue: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Queue the product to play after the current one, gaplessly (player.setNext); --clear empties the queue.")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "Product id.") var productId: String?
    @Option(name: .customLong("type"), help: "Product type (default TRACK).") var productType: String?
    @Flag(help: "Forget the queued product.") var clear = false

    func validate() throws {
        if (productId == nil) == !clear { throw ValidationError("Give a product id, or --clear.") }
    }

    func run() async throws {
        let params: JSONValue = productId.map { ["mediaProduct": Playback.product($0, type: productType)] } ?? [:]
        try await Playback.send(connection, output, "player.setNext", params, done: productId.map { "queued \($0)" } ?? "queue cleared")
    }
}

struct Play: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Start or resume playback (player.play).")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    func run() async throws { try await Playback.send(connection, output, "player.play", done: "playing") }
}

struct Pause: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Pause playback (player.pause).")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    func run() async throws { try await Playback.send(connection, output, "player.pause", done: "paused") }
}

struct Seek: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Move within the current product (player.seek).")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "Position: seconds (83.5) or m:ss (1:23.5).") var position: String

    static func seconds(_ text: String) -> Double? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count) else { return nil }
        var total = 0.0
        for (i, part) in parts.enumerated() {
            guard let n = Double(part), n.isFinite, n >= 0, i == parts.count - 1 || n == n.rounded() else { return nil }
            total = total * 60 + n
        }
        return total
    }

    func validate() throws {
        guard Self.seconds(position) != nil else { throw ValidationError("'\(position)' is not a position: give seconds (83.5) or m:ss (1:23.5).") }
    }

    func run() async throws {
        let seconds = Self.seconds(position)!
        try await Playback.send(connection, output, "player.seek", ["position": .number(seconds)], done: "seeking to \(Format.duration(seconds))")
    }
}

struct Next: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Move to the queued product (player.skipToNext).")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    func run() async throws { try await Playback.send(connection, output, "player.skipToNext", done: "next") }
}

struct Stop: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Stop and unload (player.reset); the play is closed and handed to the reporter.")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    func run() async throws { try await Playback.send(connection, output, "player.reset", done: "stopped") }
}

/// `cassettectl now`: `player.status` (`cassettectl status` is the services' own status).
struct Now: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "What the player is doing: state, product, position, station (player.status).")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Flag(help: "One line instead of a table (for repeated polling).") var short = false

    func run() async throws {
        let result = try await CtlClient.call(connection, .player, "player.status", json: output.json)
        CtlOutput.show(result, json: output.json) { short ? Self.line($0) : Self.render($0) }
    }

    static func product(_ s: JSONValue) -> String {
        guard let id = s["playbackContext"]?["productId"]?.stringValue ?? s["mediaProduct"]?["productId"]?.stringValue else { return "-" }
        if let requested = s["playbackContext"]?["requestedProductId"]?.stringValue, requested != id {
            return "\(id) (replacing \(requested))"
        }
        return id
    }

    static func position(_ s: JSONValue) -> String {
        "\(Format.duration(s["assetPosition"]?.doubleValue)) / \(Format.duration(s["playbackContext"]?["duration"]?.doubleValue))"
    }

    static func station(_ s: JSONValue) -> String {
        guard let station = s["activeStation"], station != .null else { return "-" }
        let index = (station["index"]?.intValue).map { "\($0 + 1)" } ?? "?"
        return "\(Format.text(station["name"])) (\(Format.text(station["id"])), item \(index) of \(Format.text(station["itemCount"])))"
    }

    static func line(_ s: JSONValue) -> String {
        "\(Format.text(s["playbackState"]))  \(product(s))  \(position(s))  station: \(station(s))"
    }

    static func render(_ s: JSONValue) -> String {
        let context = s["playbackContext"]
        let source = context?["offline"]?.boolValue.map { $0 ? "device copy" : "streamed" } ?? "-"
        let audio = [context?["audioQuality"], context?["audioCodec"]].compactMap { $0?.stringValue }.joined(separator: " ")
        var table = Table(headers: ["PLAYER", ""])
        table.add(["state", Format.text(s["playbackState"])])
        table.add(["product", product(s)])
        table.add(["position", position(s)])
        table.add(["audio", audio.isEmpty ? "-" : audio + (context?["audioSampleRate"]?.intValue.map { " \($0) Hz" } ?? "")])
        table.add(["source", source])
        table.add(["station", station(s)])
        table.add(["next", Format.text(s["nextMediaProduct"]?["productId"])])
        table.add(["mode", s["offlineMode"]?.boolValue == true ? "offline" : "online"])
        return table.render()
    }
}
