import AudioOutput
import BlockingIO

/// The health gate's look at the audio output: "the player can open its output or says why
/// not". While the output is open it can; while it is unavailable the output thread's own
/// reason is the answer. While nothing plays (no PCM open) the device is looked up in ALSA's
/// configuration without opening it (`ALSAConfiguration.deviceProblem`): opening it every few
/// seconds would truncate a `file` PCM's file and could make a play's open find a `hw` device
/// busy.
struct OutputProbe: Sendable {
    let health: OutputHealth

    /// Nil when the output can be used as far as can be seen, else why not in words.
    func problem() async -> String? {
        let snapshot = health.snapshot
        switch snapshot.state {
        case .open:
            return nil
        case .unavailable:
            return "audio output \(health.device) unavailable: \(snapshot.reason ?? "unknown reason") (tried \(snapshot.attempts) times)"
        case .closed:
            let device = health.device
            return await BlockingIO.run { ALSAConfiguration.deviceProblem(device) }.map {
                "audio output \(device) cannot be opened: \($0)"
            }
        }
    }
}
