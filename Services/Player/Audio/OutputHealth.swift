import Foundation
import Wire

/// What the output thread tells the rest of the player about the device, read at any time
/// (`player.status`, the watchdog) without waiting on the thread: whether the PCM is open, why
/// it is not, how many underruns it recovered from, and when audio last reached it.
final class OutputHealth: @unchecked Sendable {
    enum State: String, Sendable {
        /// No PCM is open because nothing needs one (nothing played yet, or playback ended).
        case closed = "CLOSED"
        /// The PCM is open and takes audio.
        case open = "OPEN"
        /// Opening or writing failed; the output thread keeps trying to open it again.
        case unavailable = "UNAVAILABLE"
    }

    struct Snapshot: Sendable {
        var state: State = .closed
        /// The ALSA reason of the last failure while `unavailable` ("OpenFailed: snd_pcm_open(default): …").
        var reason: String?
        var since: ContinuousClock.Instant = .now
        /// Opening attempts since the device became unavailable.
        var attempts = 0
        /// Underruns and suspends recovered from, over every PCM opened.
        var underruns = 0
        /// When the last frames were queued on the device.
        var lastFrameAt: ContinuousClock.Instant?
    }

    let device: String
    private let lock = NSLock()
    private var current = Snapshot()

    init(device: String) {
        self.device = device
    }

    var snapshot: Snapshot { lock.withLock { current } }

    func opened() {
        lock.withLock {
            if current.state != .open { current.since = .now }
            current.state = .open
            current.reason = nil
            current.attempts = 0
        }
    }

    func closed() {
        lock.withLock {
            guard current.state == .open else { return }
            current.state = .closed
            current.since = .now
        }
    }

    /// An attempt to open or write failed with `reason`.
    func failed(_ reason: String) {
        lock.withLock {
            if current.state != .unavailable { current.since = .now }
            current.state = .unavailable
            current.reason = reason
            current.attempts += 1
        }
    }

    func wrote(underruns: Int) {
        lock.withLock {
            current.lastFrameAt = .now
            current.underruns += underruns
        }
    }

    func addUnderruns(_ count: Int) {
        guard count > 0 else { return }
        lock.withLock { current.underruns += count }
    }

    /// `player.status`'s `output` object.
    var json: JSONValue {
        let s = snapshot
        let now = ContinuousClock.now
        return [
            "device": .string(device),
            "state": .string(s.state.rawValue),
            "error": s.reason.map { ["name": .string(PlayerError.Code.outputUnavailable.name), "message": .string($0)] } ?? .null,
            "attempts": .number(Double(s.attempts)),
            "underruns": .number(Double(s.underruns)),
            "lastFrameMsAgo": s.lastFrameAt.map { .number(PlaybackEngine.milliseconds(now - $0).rounded()) } ?? .null,
        ]
    }
}
