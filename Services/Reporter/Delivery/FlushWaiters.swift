/// What `playlog.flush` learnt within its bound.
enum FlushOutcome: Sendable, Equatable {
    /// An attempt ended (nil: nothing was pending, or delivery has stopped).
    case ended(DeliveryAttempt?)
    /// The attempt was still at the origin when the bound ran out; it goes on in the
    /// background and its end is published (`Delivered`, `DeliveryFailed`).
    case stillDelivering
}

/// The `playlog.flush` calls waiting for a delivery attempt to end, by id, and whether the loop
/// has stopped taking work (a flush then answers at once instead of waiting for an attempt that
/// never comes).
struct FlushWaiters {
    private var waiting: [Int: CheckedContinuation<FlushOutcome, Never>] = [:]
    private var nextID = 0
    private(set) var stopped = false

    /// An id for the next waiter, known before it waits so its timer can name it.
    mutating func reserve() -> Int {
        defer { nextID += 1 }
        return nextID
    }

    mutating func wait(_ id: Int, _ continuation: CheckedContinuation<FlushOutcome, Never>) {
        waiting[id] = continuation
    }

    /// Answers one waiter (its bound ran out); nothing when it was answered already.
    mutating func answer(_ id: Int, _ outcome: FlushOutcome) {
        waiting.removeValue(forKey: id)?.resume(returning: outcome)
    }

    /// Answers every waiter: an attempt ended (`attempt`), or there was nothing to attempt (nil).
    mutating func answerAll(_ attempt: DeliveryAttempt?) {
        let waiters = waiting
        waiting = [:]
        for waiter in waiters.values { waiter.resume(returning: .ended(attempt)) }
    }

    /// The loop takes no more work: every waiter is answered, and later flushes at once.
    mutating func stop() {
        stopped = true
        answerAll(nil)
    }
}
