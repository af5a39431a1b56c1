import ArgumentParser
import Wire

// The player's controls that return as soon as the player accepted the request; what happens
// next arrives as `player` events (`cassettectl watch player`).

struct Skip: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Skip to the station's next item (station.skip).")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    func run() async throws { try await Playback.send(connection, output, "station.skip", done: "skipped") }
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
