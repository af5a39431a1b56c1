/// The engine's fill rounds, one at a time: a round asked for while one runs makes the running
/// fill go round again instead of running beside it, so admission (which reserves storage for
/// what it starts) never sees two rounds' candidates at once. Callers that joined a running
/// fill are resumed once it ends. Kept on the engine's actor.
struct FillRounds {
    private var filling = false
    private var requested = false
    /// Callers of `refill` that came during a fill, resumed once it ends.
    private var waiters: [CheckedContinuation<Void, Never>] = []
    /// A refill is scheduled for when the actor is free (`refillSoon`).
    private var scheduled = false

    /// Asks for a round; true when no fill runs and the caller is to run it (`takeRequest`
    /// until false, then `end`), false when the running fill takes the request (`join` it).
    mutating func begin() -> Bool {
        requested = true
        guard !filling else { return false }
        filling = true
        return true
    }

    /// Waits for the running fill's end.
    mutating func join(_ waiter: CheckedContinuation<Void, Never>) {
        waiters.append(waiter)
    }

    /// True when a round was asked for since the last one began.
    mutating func takeRequest() -> Bool {
        defer { requested = false }
        return requested
    }

    /// The fill ended: everyone who joined it goes on.
    mutating func end() {
        filling = false
        let waiting = waiters
        waiters = []
        waiting.forEach { $0.resume() }
    }

    /// True when a refill is to be scheduled; false when one already is.
    mutating func schedule() -> Bool {
        guard !scheduled else { return false }
        scheduled = true
        return true
    }

    /// The scheduled refill runs: the next one may be scheduled.
    mutating func scheduledRan() {
        scheduled = false
    }
}
