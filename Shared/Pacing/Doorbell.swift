import Synchronization

/// Wakes one waiting loop: new work, a request to try now, the network back, shutdown. A ring
/// that comes while the loop is busy is kept (as a set of reasons) for its next wait, so none is
/// lost, and a ring costs the ringing thread no more than taking a lock (a committer rings from
/// its own thread after every commit).
///
/// The one wake-up primitive of the services: the reporter's delivery loop, the player's
/// play-log writer and sender and its streaming privilege, the downloader's queue.
public final class Doorbell<Reason: Hashable & Sendable>: Sendable {
    private struct Waiter {
        var id: Int
        /// nil: any reason wakes it.
        var wakingFor: Set<Reason>?
        var continuation: CheckedContinuation<Set<Reason>?, Never>
    }

    private struct State {
        var rung: Set<Reason> = []
        var waiter: Waiter?
        var nextID = 0
        var closed = false

        /// The kept reasons a wait for `wakingFor` takes (all when nil); they are no longer kept.
        mutating func take(_ wakingFor: Set<Reason>?) -> Set<Reason> {
            let taken = wakingFor.map { rung.intersection($0) } ?? rung
            rung.subtract(taken)
            return taken
        }
    }

    private let state = Mutex(State())

    public init() {}

    public func ring(_ reason: Reason) {
        let woken = state.withLock { s -> (CheckedContinuation<Set<Reason>?, Never>, Set<Reason>)? in
            s.rung.insert(reason)
            guard let waiter = s.waiter else { return nil }
            let taken = s.take(waiter.wakingFor)
            guard !taken.isEmpty else { return nil }
            s.waiter = nil
            return (waiter.continuation, taken)
        }
        if let (continuation, reasons) = woken { continuation.resume(returning: reasons) }
    }

    /// Closes for good (shutdown): the wait under way and every later one return nil at once.
    public func close() {
        let waiter = state.withLock { s -> Waiter? in
            s.closed = true
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.continuation.resume(returning: nil)
    }

    public var isClosed: Bool { state.withLock { $0.closed } }

    /// Waits for a ring of one of `wakingFor` (nil: any) or until `limit` passed (nil: no
    /// limit). Returns the reasons rung among those — empty when the time ran out; the others
    /// stay kept for a later wait — or nil once the bell is closed or the waiting task is
    /// cancelled. One loop waits on a bell at a time.
    @discardableResult
    public func wait(upTo limit: Duration? = nil, wakingFor: Set<Reason>? = nil) async -> Set<Reason>? {
        let registered = state.withLock { s -> Int? in
            if s.closed { return nil }
            s.nextID += 1
            return s.nextID
        }
        guard let id = registered, !Task.isCancelled else { return nil }
        let timer = limit.map { limit in
            Task { [weak self] in
                try? await Task.sleep(for: limit)
                guard !Task.isCancelled else { return }
                self?.end(id, with: [])
            }
        }
        defer { timer?.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { s -> Set<Reason>?? in
                    // Cancelled before the handler could see this waiter: it would never be resumed.
                    if s.closed || Task.isCancelled { return .some(nil) }
                    let taken = s.take(wakingFor)
                    if !taken.isEmpty { return .some(taken) }
                    s.waiter = Waiter(id: id, wakingFor: wakingFor, continuation: continuation)
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            end(id, with: nil)
        }
    }

    /// Ends wait `id`, if it still waits, with `value`.
    private func end(_ id: Int, with value: Set<Reason>?) {
        let waiter = state.withLock { s -> Waiter? in
            guard let waiter = s.waiter, waiter.id == id else { return nil }
            s.waiter = nil
            return waiter
        }
        waiter?.continuation.resume(returning: value)
    }
}

/// The reason of a doorbell that has only one.
public enum Ring: Hashable, Sendable {
    case ring
}

extension Doorbell where Reason == Ring {
    public func ring() { ring(.ring) }
}
