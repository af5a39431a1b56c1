import ServiceKit
import Wire

/// The player's composition. The playback engine arrives with its issue; for now it
/// serves the common methods and reports its audio settings.
enum Player {
    struct AudioSettings: Sendable {
        var device: String
        var pace: AudioPace
    }

    static func build(_ context: DaemonContext, audio: AudioSettings) async throws -> DaemonParts {
        DaemonParts(status: {
            ["audioDevice": .string(audio.device), "audioPace": .string(audio.pace.rawValue)]
        })
    }
}
