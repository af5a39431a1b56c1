import Foundation
import Wire

/// Keeps every event a connection receives, for tests that look back over all of them or
/// wait for one while other work goes on.
public final class EventCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [RPCEvent] = []
    private var pump: Task<Void, Never>?

    public init(_ client: RPCClient) {
        let stream = client.events
        pump = Task { [weak self] in
            for await event in stream { self?.append(event) }
        }
    }

    deinit { pump?.cancel() }

    private func append(_ event: RPCEvent) {
        lock.withLock { events.append(event) }
    }

    /// Every event received so far, in arrival order.
    public var all: [RPCEvent] { lock.withLock { events } }

    public var count: Int { lock.withLock { events.count } }

    /// The events of `type` received so far.
    public func of(_ type: String) -> [RPCEvent] { all.filter { $0.type == type } }

    /// Waits for an event at or after position `from` that satisfies `match`; throws after `timeout` seconds.
    @discardableResult
    public func wait(_ what: String, from: Int = 0, timeout: Double, _ match: (RPCEvent) -> Bool) async throws -> RPCEvent {
        let position = try await waitPosition(what, from: from, timeout: timeout, match)
        return lock.withLock { events[position] }
    }

    /// Like `wait`, but returns the matching event's position.
    public func waitPosition(_ what: String, from: Int = 0, timeout: Double, _ match: (RPCEvent) -> Bool) async throws -> Int {
        let deadline = Date().addingTimeInterval(timeout)
        var next = from
        while true {
            let fresh = lock.withLock { events.count > next ? Array(events[next...]) : [] }
            if let offset = fresh.firstIndex(where: match) { return next + offset }
            next += fresh.count
            guard Date() < deadline else { throw HarnessError("no \(what) event within \(timeout) s (\(next) events seen)") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}
