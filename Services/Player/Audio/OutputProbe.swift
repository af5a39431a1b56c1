import AudioOutput
import BlockingIO
import Foundation
import NIOConcurrencyHelpers

/// The health gate's look at the audio output: "the player can open its output or says why
/// not". While the output is open it can; while it is unavailable the output thread's own
/// reason is the answer. While nothing plays (no PCM open) the device is opened and closed
/// again, at most once every `every`, under the output's `deviceLock`, so that a play starting
/// meanwhile waits a moment for the device instead of finding it busy.
final class OutputProbe: Sendable {
    static let every: Duration = .seconds(60)

    private let health: OutputHealth
    private let pacing: PCMPacing
    private let last = NIOLockedValueBox<(at: ContinuousClock.Instant, problem: String?)?>(nil)

    init(health: OutputHealth, pacing: PCMPacing) {
        self.health = health
        self.pacing = pacing
    }

    /// Nil when the output can be used, else why not in words.
    func problem() async -> String? {
        let snapshot = health.snapshot
        switch snapshot.state {
        case .open:
            return nil
        case .unavailable:
            return "audio output \(health.device) unavailable: \(snapshot.reason ?? "unknown reason") (retried \(snapshot.attempts) times)"
        case .closed:
            if let last = last.withLockedValue({ $0 }), ContinuousClock.now - last.at < Self.every { return last.problem }
            let failedBefore = last.withLockedValue { $0?.problem != nil }
            let problem = await BlockingIO.run { [health, pacing] in
                Self.tryOpen(health: health, pacing: pacing, reload: failedBefore)
            }
            last.withLockedValue { $0 = (ContinuousClock.now, problem) }
            return problem
        }
    }

    private static func tryOpen(health: OutputHealth, pacing: PCMPacing, reload: Bool) -> String? {
        health.deviceLock.lock()
        defer { health.deviceLock.unlock() }
        // The output thread opened it meanwhile (or failed to): its state is the answer.
        guard health.snapshot.state == .closed else { return nil }
        // A device that failed before may have been plugged in or defined since.
        if reload { ALSAConfiguration.reload() }
        // The reason is reported here; alsa-lib's own lines would repeat it every minute.
        ALSAConfiguration.setQuiet(true)
        defer { ALSAConfiguration.setQuiet(false) }
        do {
            let pcm = try PCMOutput(device: health.device,
                                    configuration: PCMConfiguration(format: .s16, sampleRate: 48_000, channels: 2, pacing: pacing))
            pcm.close()
            return nil
        } catch {
            return "audio output \(health.device) cannot be opened: \(error)"
        }
    }
}
