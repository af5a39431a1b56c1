import Wire

/// How the start of a loaded product ended, for the callers of `player.load` and `player.play`
/// who wait for it: `nil` once its file opened (or it was replaced or reset, which is no failure
/// of the call), or the named error it failed with before any sound. Kept for the last few
/// products, so a caller who asks just after the outcome still hears it.
struct LoadOutcomes {
    private var waiting: [TrackToken: [Int: CheckedContinuation<RPCError?, Never>]] = [:]
    private var settled: [TrackToken: RPCError?] = [:]
    private var lastWaiter = 0
    /// Outcomes kept for late askers.
    static let kept = 16

    func outcome(of token: TrackToken) -> RPCError?? { settled[token] }

    /// Registers a waiter; its id lets a timer give up on it alone.
    mutating func add(_ token: TrackToken, _ continuation: CheckedContinuation<RPCError?, Never>) -> Int {
        lastWaiter += 1
        waiting[token, default: [:]][lastWaiter] = continuation
        return lastWaiter
    }

    /// The outcome of `token`: every waiter hears it; the first outcome of a token is the one kept.
    mutating func settle(_ token: TrackToken, _ error: RPCError?) {
        guard settled[token] == nil else { return }
        settled[token] = .some(error)
        if settled.count > Self.kept, let oldest = settled.keys.min() { settled[oldest] = nil }
        for continuation in (waiting.removeValue(forKey: token) ?? [:]).values { continuation.resume(returning: error) }
    }

    /// A waiter's time is up: it hears "no failure known".
    mutating func giveUp(_ token: TrackToken, waiter: Int) {
        waiting[token]?.removeValue(forKey: waiter)?.resume(returning: nil)
        if waiting[token]?.isEmpty == true { waiting[token] = nil }
    }
}
