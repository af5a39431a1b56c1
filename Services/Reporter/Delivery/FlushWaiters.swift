/// `playlog.flush`: an attempt now, answered within a bound whatever the origin does.
extension DeliveryEngine {
    /// What `playlog.flush` learnt within its bound.
    enum FlushOutcome: Sendable, Equatable {
        /// An attempt ended (nil: nothing was pending, or delivery has stopped).
        case ended(DeliveryAttempt?)
        /// The attempt was still at the origin when the bound ran out; it goes on in the
        /// background and its end is published (`Delivered`, `DeliveryFailed`).
        case stillDelivering
    }

    /// Rings for an attempt now and returns once one has ended, or after `seconds` while it
    /// still runs (an origin that never answers holds a request for its whole timeout).
    func flush(within seconds: Double) async -> FlushOutcome {
        guard !stopped else { return .ended(nil) }
        let id = nextFlushWaiter
        nextFlushWaiter += 1
        let timer = Task { [weak self] in
            try await Task.sleep(for: .milliseconds(Int64(seconds * 1000)))
            await self?.answerFlush(id, .stillDelivering)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            flushWaiters[id] = continuation
            bell.ring(.flush)
        }
    }

    func park() {
        stopped = true
        answerFlushes(nil)
    }

    func answerFlushes(_ attempt: DeliveryAttempt?) {
        let waiters = flushWaiters
        flushWaiters = [:]
        for waiter in waiters.values { waiter.resume(returning: .ended(attempt)) }
    }

    private func answerFlush(_ id: Int, _ outcome: FlushOutcome) {
        flushWaiters.removeValue(forKey: id)?.resume(returning: outcome)
    }
}
