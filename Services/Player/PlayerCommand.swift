import ArgumentParser
import ServiceKit

/// Entry point: argument parsing only; the service itself is `Player.build`.
@main
struct PlayerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "player",
        abstract: "Cassette player: plays offline and streamed media through ALSA.")

    @OptionGroup var options: CommonOptions

    @Option(name: .long, help: "ALSA PCM to play through (default: default).")
    var audioDevice: String = "default"

    @Option(name: .long, help: "device: the PCM paces playback; realtime: pace writes to the wall clock (for null/file PCMs).")
    var audioPace: AudioPace = .device

    func run() async throws {
        let audio = Player.AudioSettings(device: audioDevice, pace: audioPace)
        let code = await Daemon.run(service: "player", options: options) { context in
            try await Player.build(context, audio: audio)
        }
        if code != 0 { throw ExitCode(code) }
    }
}

enum AudioPace: String, ExpressibleByArgument, Sendable {
    case device, realtime
}
