import Wire

/// Callers of `player.load` and `player.play` waiting to hear how a product started.
extension PlaybackEngine {
    /// How the start of `token` ended (see `LoadOutcomes`), waiting for it up to `limit`; nil when
    /// it started, was replaced, or is not known by then.
    func outcome(of token: TrackToken, within limit: Duration) async -> RPCError? {
        if let known = outcomes.outcome(of: token) { return known }
        return await withCheckedContinuation { continuation in
            let waiter = outcomes.add(token, continuation)
            Task {
                try? await Task.sleep(for: limit)
                self.giveUpWaiting(token, waiter)
            }
        }
    }

    private func giveUpWaiting(_ token: TrackToken, _ waiter: Int) {
        outcomes.giveUp(token, waiter: waiter)
    }

    /// The token of the active product while it has not opened yet (a `play` then waits for it).
    var activeTokenNotStarted: TrackToken? {
        guard let current = active, outcomes.outcome(of: current.token) == nil else { return nil }
        return current.token
    }
}
