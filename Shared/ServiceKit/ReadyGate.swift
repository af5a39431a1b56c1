import NIOConcurrencyHelpers

/// Opens once, when the service listens and has sent READY=1. Work that must not run
/// before that (opening the catalog, the first watchdog ping) waits here. When the service
/// cannot listen the gate is abandoned instead: its waiters return and find it not open, so
/// a start-up failure ends the service at once, with its error, instead of leaving work
/// parked on a gate that never opens.
final class ReadyGate: Sendable {
    private struct State {
        var open = false
        var abandoned = false
        var nextID = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = NIOLockedValueBox(State())

    var isOpen: Bool { state.withLockedValue { $0.open } }

    func open() { release { $0.open = true } }

    /// The service will never be ready: wakes every waiter, present and future.
    func abandon() { release { $0.abandoned = true } }

    private func release(_ change: (inout State) -> Void) {
        let waiters = state.withLockedValue { s -> [CheckedContinuation<Void, Never>] in
            change(&s)
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        waiters.forEach { $0.resume() }
    }

    /// Returns when the gate opens or is abandoned (check `isOpen`), or at once when the
    /// waiting task is cancelled (a service that failed to start is being torn down and must
    /// not hang here).
    func wait() async {
        let id = state.withLockedValue { s -> Int in
            s.nextID += 1
            return s.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLockedValue { s -> Bool in
                    if s.open || s.abandoned || Task.isCancelled { return true }
                    s.waiters[id] = c
                    return false
                }
                if resumeNow { c.resume() }
            }
        } onCancel: {
            state.withLockedValue { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}
