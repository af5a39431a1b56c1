import MediaDecoder

/// Turns "a read is waiting for bytes" into one `.stalled` (once the wait outlasts `grace`, so a
/// fast link's short waits at a chunk boundary are not reported) and "bytes arrived after a stall"
/// into one `.resumed`. A value owned by one source and used from its reading thread; the source
/// emits the returned event itself, outside any lock.
struct StallTracker {
    let grace: Duration
    private var waitingSince: ContinuousClock.Instant?
    private(set) var isStalled = false

    init(grace: Double) {
        self.grace = .milliseconds(Int64(max(0, grace) * 1000))
    }

    /// The read found nothing to return and will wait; `.stalled` when this wait is now a stall.
    mutating func waiting() -> ByteSourceEvent? {
        let now = ContinuousClock.now
        let since = waitingSince ?? now
        waitingSince = since
        guard !isStalled, now - since >= grace else { return nil }
        isStalled = true
        return .stalled
    }

    /// The read got bytes (or reached the end); `.resumed` when it had reported a stall.
    mutating func progressed() -> ByteSourceEvent? {
        waitingSince = nil
        guard isStalled else { return nil }
        isStalled = false
        return .resumed
    }
}
