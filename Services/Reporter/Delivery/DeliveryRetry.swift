import Foundation
import NIOConcurrencyHelpers
import ServiceKit

extension DeliveryEngine {
    /// How long records may wait with the origin reachable and none delivered before the queue
    /// counts as not moving.
    static let stuckAfter: Duration = .seconds(300)
    /// Failed attempts in a row, the origin answering each time, before that counts as a problem.
    static let failingAfter = 3

    /// The health gate's "the queue is moving or the origin is known unreachable": nil when
    /// nothing waits, when records are being delivered, when the origin cannot be reached (the
    /// box is offline: the plays wait, as they should), or when no origin is configured (they
    /// are kept until one is). Else why the queue is stuck, in words.
    func healthProblem(pending: Int) -> String? {
        guard hasOrigin, pending > 0 else { return nil }
        if stopped { return "\(pending) records pending and the delivery loop has stopped" }
        if unreachable { return nil }
        if failures >= Self.failingAfter {
            let error = lastError.map { "\($0["name"]?.stringValue ?? "error"): \($0["message"]?.stringValue ?? "")" } ?? "unknown error"
            return "\(pending) records pending; the origin refused the last \(failures) deliveries (\(error))"
        }
        let waited = ContinuousClock.now - movedAt
        if waited > Self.stuckAfter {
            return "\(pending) records pending; none delivered for \(waited.components.seconds) s"
        }
        return nil
    }
}

/// Records delivered by this process, read without waiting on the engine.
final class DeliveredCount: Sendable {
    private let count = NIOLockedValueBox(0)
    func add(_ n: Int) { count.withLockedValue { $0 += n } }
    var value: Int { count.withLockedValue { $0 } }
}
