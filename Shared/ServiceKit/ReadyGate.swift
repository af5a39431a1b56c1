import NIOConcurrencyHelpers

/// Opens once, when the service listens and has sent READY=1. Work that must not run
/// before that (opening the catalog, the first watchdog ping) waits here.
final class ReadyGate: Sendable {
    private struct State {
        var open = false
        var nextID = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = NIOLockedValueBox(State())

    func open() {
        let waiters = state.withLockedValue { s -> [CheckedContinuation<Void, Never>] in
            s.open = true
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        waiters.forEach { $0.resume() }
    }

    /// Returns when the gate opens, or at once when the waiting task is cancelled (a service
    /// that failed to start is being torn down and must not hang here).
    func wait() async {
        let id = state.withLockedValue { s -> Int in
            s.nextID += 1
            return s.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLockedValue { s -> Bool in
                    if s.open || Task.isCancelled { return true }
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
