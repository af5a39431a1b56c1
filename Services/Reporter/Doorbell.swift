import NIOConcurrencyHelpers

/// Wakes the delivery loop: new records, `playlog.flush`, or the origin reachable again.
/// Rings that come while nobody waits for them are kept (as a set of reasons) for a later wait.
///
/// A lock rather than an actor: the group committer rings from its own thread after every
/// commit that stored something, and a ring the loop is not waiting for (new records while
/// it waits out a backoff) should cost that thread nothing more than taking the lock.
final class Doorbell: Sendable {
    enum Reason: Sendable, Hashable {
        case newRecords
        case flush
        case reachable
        case closed
    }

    private struct Waiter {
        var id: Int
        var wakingFor: Set<Reason>
        var continuation: CheckedContinuation<Set<Reason>, Never>
    }

    private struct State {
        var rung: Set<Reason> = []
        var waiter: Waiter?
        var nextID = 0
        var closed = false

        /// The kept reasons among `reasons`, which are no longer kept.
        mutating func take(_ reasons: Set<Reason>) -> Set<Reason> {
            let taken = rung.intersection(reasons)
            rung.subtract(reasons)
            return taken
        }
    }

    private let state = NIOLockedValueBox(State())

    func ring(_ reason: Reason) {
        let woken = state.withLockedValue { s -> (CheckedContinuation<Set<Reason>, Never>, Set<Reason>)? in
            s.rung.insert(reason)
            guard let waiter = s.waiter, !waiter.wakingFor.isDisjoint(with: s.rung) else { return nil }
            s.waiter = nil
            return (waiter.continuation, s.take(waiter.wakingFor))
        }
        if let (continuation, reasons) = woken { continuation.resume(returning: reasons) }
    }

    /// Closes for good (shutdown): every wait from now on returns `[.closed]` at once.
    func close() {
        state.withLockedValue { $0.closed = true }
        ring(.closed)
    }

    var isClosed: Bool { state.withLockedValue { $0.closed } }

    /// Waits for a ring of one of `wakingFor` (`.closed` always wakes) or until `seconds` pass
    /// (nil: no limit). Returns the reasons rung among those, empty when the time ran out; the
    /// others stay kept for a later wait. Cancellation ends the wait like `close()`.
    func wait(seconds: Double?, wakingFor: Set<Reason> = [.newRecords, .flush, .reachable]) async -> Set<Reason> {
        let wakingFor = wakingFor.union([.closed])
        let registered = state.withLockedValue { s -> Int? in
            if s.closed { return nil }
            s.nextID += 1
            return s.nextID
        }
        guard let id = registered else { return [.closed] }
        let timer = seconds.map { seconds in
            Task { [weak self] in
                try? await Task.sleep(nanoseconds: UInt64(max(0, seconds) * 1e9))
                guard !Task.isCancelled else { return }
                self?.expire(id)
            }
        }
        let reasons = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = state.withLockedValue { s -> Set<Reason>? in
                    if s.closed { return [.closed] }
                    if !s.rung.isDisjoint(with: wakingFor) { return s.take(wakingFor) }
                    s.waiter = Waiter(id: id, wakingFor: wakingFor, continuation: continuation)
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            close()
        }
        timer?.cancel()
        return reasons
    }

    private func expire(_ id: Int) {
        let waiter = state.withLockedValue { s -> Waiter? in
            guard let waiter = s.waiter, waiter.id == id else { return nil }
            s.waiter = nil
            return waiter
        }
        waiter?.continuation.resume(returning: [])
    }
}
