import ArgumentParser
import ServiceKit

/// Entry point: argument parsing only; the service itself is `Player.build`.
@main
struct PlayerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "player",
        abstract: "Cassette player: plays offline and streamed media through ALSA.",
        version: Daemon.version)

    @OptionGroup var options: CommonOptions

    // Optional so that the config file's player.audioDevice / player.audioPace apply when the
    // flag is absent (flag → config → default, like every other setting).
    @Option(name: .long, help: "ALSA PCM to play through (config player.audioDevice; default: default).")
    var audioDevice: String?

    @Option(
        name: .long,
        help: "device: the PCM paces playback; realtime: pace writes to the wall clock (for null/file PCMs). Config player.audioPace; default: device.")
    var audioPace: AudioPace?

    func run() async throws {
        let audio = Player.AudioFlags(device: audioDevice, pace: audioPace)
        let code = await Daemon.run(service: "player", options: options) { context in
            try await Player.build(context, audio: audio)
        }
        if code != 0 { throw ExitCode(code) }
    }
}

enum AudioPace: String, ExpressibleByArgument, Sendable {
    case device, realtime
}
