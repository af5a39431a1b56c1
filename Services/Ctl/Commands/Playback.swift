import ArgumentParser
import Wire

/// The player's transport controls. `tune`, `load` and `play` wait for the player's events to
/// say the product plays (or why not); the others return once the player accepted the request
/// (what happens next: `cassettectl watch player`).
enum Playback {
    static func send(
        _ connection: ConnectionOptions, _ output: OutputOptions, _ method: String,
        _ params: JSONValue = .object([:]), done: String
    ) async throws {
        let result = try await CtlClient.call(connection, .player, method, params, json: output.json)
        CtlOutput.show(result, json: output.json) { _ in done }
    }

    static func product(_ id: String, type: String?) -> JSONValue {
        ["productId": .string(id), "productType": .string(type ?? "TRACK")]
    }

    /// The end of a command that waited: the player's status as JSON, or `line` and what plays.
    static func finish(_ connection: Connection, json: Bool, line: String) async throws {
        let status = try await connection.call("player.status")
        CtlOutput.show(status, json: json) { "\(line): \(Now.what($0)) (\(Format.text($0["playbackState"])))" }
    }
}

/// `--no-wait`, for the commands that otherwise wait for the player's events.
struct PlayerWaitOptions: ParsableArguments {
    @Flag(help: "Return once the player accepted the request, without waiting for the product to load or play.")
    var noWait = false
}

struct Tune: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Play a station (station.tune): from the device, else streamed; wait until its first item plays.",
        discussion: """
            The player answers once the first frame is queued on the audio device. Exit status 2 \
            when the station cannot be played or its item fails (the player's error on stderr, with \
            a hint: OutputUnavailable when no audio device can be opened, StationNotPlayable, \
            FileMissing, …), 75 when it does not start within --timeout.
            """)
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var waiting: PlayerWaitOptions
    @Argument(help: "Station id, e.g. st-9.") var stationId: String

    func run() async throws {
        if waiting.noWait {
            let answer = try await CtlClient.call(connection, .player, "station.tune", ["stationId": .string(stationId)], json: output.json)
            CtlOutput.show(answer, json: output.json) { Self.line(asked: stationId, answer: $0) }
            return
        }
        let player = try await Connection.open(connection, .player, json: output.json)
        defer { Task { await player.close() } }
        try await player.subscribe(["player"])
        let answer = try await PlayerOutcome.start(player, "station.tune", ["stationId": .string(stationId)], goal: .tuned(stationId))
        let tuned = answer["stationId"]?.stringValue ?? stationId
        let line = Self.line(asked: stationId, answer: answer)
        try await PlayerOutcome.wait(player, for: .tuned(tuned), what: "the first item of \(tuned)", timeout: connection.timeout)
        try await Playback.finish(player, json: output.json, line: line)
    }
}

extension Tune {
    /// What the player's answer means: the station asked for, or, with the origin unreachable,
    /// the one on the device it played instead (`fallback`).
    static func line(asked: String, answer: JSONValue) -> String {
        let tuned = answer["stationId"]?.stringValue ?? asked
        return tuned == asked ? "tuned to \(asked)" : "\(asked) cannot be reached; playing \(tuned) from the device"
    }
}

struct Load: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Load a media product for playback (player.load); --play starts it.",
        discussion: """
            Waits until the player found the product's source (and, with --play, until it plays). \
            Exit status 2 when the product fails (the player's error on stderr, e.g. FileMissing, \
            IllegalPlaybackRequest), 75 when the player did not get there within --timeout.
            """)
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var waiting: PlayerWaitOptions
    @Argument(help: "Product id, e.g. tr-1.") var productId: String
    @Option(name: .customLong("type"), help: "Product type (default TRACK).") var productType: String?
    @Flag(help: "Start playing once loaded (player.play).") var play = false

    func run() async throws {
        let player = try await Connection.open(connection, .player, json: output.json)
        defer { Task { await player.close() } }
        if !waiting.noWait { try await player.subscribe(["player"]) }
        var result = try await PlayerOutcome.start(
            player, "player.load", ["mediaProduct": Playback.product(productId, type: productType)],
            goal: .loaded(productId))
        if !waiting.noWait {
            try await PlayerOutcome.wait(player, for: .loaded(productId), what: "load \(productId)", timeout: connection.timeout)
        }
        if play {
            result = try await PlayerOutcome.start(player, "player.play", goal: .playing)
            if !waiting.noWait {
                try await PlayerOutcome.wait(player, for: .playing, what: "play \(productId)", timeout: connection.timeout)
            }
        }
        if waiting.noWait {
            return CtlOutput.show(result, json: output.json) { _ in "loaded \(productId)" + (play ? ", playing" : "") }
        }
        try await Playback.finish(player, json: output.json, line: play ? "playing" : "loaded")
    }
}

struct Play: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Start or resume playback (player.play) and wait until it plays.",
        discussion: """
            Exit status 2 when nothing is loaded or the product fails (the player's error on \
            stderr), 75 when it does not play within --timeout.
            """)
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var waiting: PlayerWaitOptions

    func run() async throws {
        if waiting.noWait { return try await Playback.send(connection, output, "player.play", done: "playing") }
        let player = try await Connection.open(connection, .player, json: output.json)
        defer { Task { await player.close() } }
        try await player.subscribe(["player"])
        let before = try await player.call("player.status")["playbackState"]?.stringValue
        if before == "IDLE" {
            throw CtlFailure(
                name: "NothingToPlay", message: "nothing to play: no product is loaded", exit: ExitStatus.workFailed,
                service: .player, hint: Hints.forError("NothingToPlay", service: .player)
            ).report(json: output.json)
        }
        _ = try await PlayerOutcome.start(player, "player.play", goal: .playing)
        if before == "NOT_PLAYING" {
            try await PlayerOutcome.wait(player, for: .playing, what: "play", timeout: connection.timeout)
        }
        try await Playback.finish(player, json: output.json, line: "playing")
    }
}
