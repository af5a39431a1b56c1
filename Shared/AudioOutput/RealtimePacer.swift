#if canImport(Glibc)
    import Glibc
#endif

/// Wall-clock model of a device that plays `rate` frames per second, for `PCMPacing.realtime`.
/// Tracks frames written against the time since playback started and says how long the writer
/// must sleep to stay at most `leadFrames` ahead. If the writer falls behind (an underrun of the
/// imaginary device), the clock restarts rather than letting it burst to catch up.
struct RealtimePacer {
    let rate: Double
    let leadFrames: Int
    /// When frame 0 of the current run would have started playing.
    private var origin: ContinuousClock.Instant?
    private var framesWritten = 0
    private var pausedAt: ContinuousClock.Instant?

    init(rate: Int, leadFrames: Int) {
        self.rate = Double(rate)
        self.leadFrames = leadFrames
    }

    /// Frames written but not yet "played" at `now`.
    func pendingFrames(at now: ContinuousClock.Instant = .now) -> Int {
        guard let origin else { return 0 }
        let clock = pausedAt ?? now
        let played = min(Double(framesWritten), seconds(clock - origin) * rate)
        return max(0, framesWritten - Int(played))
    }

    /// Records `frames` written at `now`; returns how long to sleep before writing more.
    mutating func didWrite(_ frames: Int, at now: ContinuousClock.Instant = .now) -> Duration {
        if pausedAt != nil { resume(at: now) }
        if origin == nil || pendingFrames(at: now) == 0 {
            // Start, or restart after the writer fell behind real time.
            origin = now
            framesWritten = 0
        }
        framesWritten += frames
        let excess = pendingFrames(at: now) - leadFrames
        return excess > 0 ? .seconds(Double(excess) / rate) : .zero
    }

    /// Time until everything written has been "played".
    func timeToDrain(at now: ContinuousClock.Instant = .now) -> Duration {
        .seconds(Double(pendingFrames(at: now)) / rate)
    }

    mutating func pause(at now: ContinuousClock.Instant = .now) {
        if pausedAt == nil { pausedAt = now }
    }

    mutating func resume(at now: ContinuousClock.Instant = .now) {
        guard let pausedAt else { return }
        if let origin { self.origin = origin + (now - pausedAt) }
        self.pausedAt = nil
    }

    /// Forgets everything written (after drop or drain).
    mutating func reset() {
        origin = nil
        framesWritten = 0
        pausedAt = nil
    }

    private func seconds(_ d: Duration) -> Double {
        let (s, atto) = d.components
        return Double(s) + Double(atto) * 1e-18
    }
}

/// Blocks the calling thread (the output's own thread, never a Swift concurrency one).
func sleepBlocking(_ duration: Duration) {
    let (s, atto) = duration.components
    guard s > 0 || atto > 0 else { return }
    var request = timespec(tv_sec: Int(s), tv_nsec: Int(atto / 1_000_000_000))
    var remaining = timespec()
    while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
}
