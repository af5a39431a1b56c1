import Foundation

/// A value guarded by a lock, for state that synchronous NIO-side code reads and writes
/// without hopping onto an actor (fault queues, the clock offset, request counters).
///
/// The origin target does not depend on `NIOConcurrencyHelpers`, and the package manifest is
/// shared with other teams, so a tiny `NSLock` wrapper stands in for `NIOLockedValueBox`.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access; keep it short, it blocks an event-loop thread.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    var current: Value {
        withLock { $0 }
    }
}
