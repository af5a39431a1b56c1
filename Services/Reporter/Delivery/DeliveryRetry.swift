import Foundation
import NIOConcurrencyHelpers
import Pacing
import Wire

/// The delivery loop's failure record: failed attempts in a row, when the next one may go, and
/// whether the origin could be reached at all. It schedules retries (`Backoff`, with jitter)
/// and judges, for the health gate, whether the queue is moving.
struct DeliveryRetry: Sendable {
    /// How long records may wait with the origin reachable and none delivered before the queue
    /// counts as not moving.
    static let stuckAfter: Duration = .seconds(300)
    /// Failed attempts in a row, the origin answering each time, before that counts as a problem.
    static let failingAfter = 3

    private let backoff: Backoff
    private let maxSeconds: Double
    private(set) var failures = 0
    /// When the next attempt may go after a failure; nil when it may go now.
    var retryAt: ContinuousClock.Instant?
    /// The last failure was "no connection" rather than an answer: probing may end the wait.
    var unreachable = false
    private(set) var lastError: JSONValue?
    /// When the queue last moved (a delivery succeeded), or the engine started: the health gate's
    /// "the queue is moving".
    private var movedAt = ContinuousClock.now

    init(initialSeconds: Double, maxSeconds: Double) {
        backoff = Backoff(initial: initialSeconds, cap: maxSeconds, jitter: 0.2)
        self.maxSeconds = maxSeconds
    }

    /// Counts a failed attempt and schedules the next: the backoff, or the server's
    /// `Retry-After` when it asks for longer (capped at `retryMaxSeconds`), and never sooner than
    /// `atLeast` (after a TLS failure, `RetryPolicy.tlsRetrySeconds`). Returns the delay in seconds.
    mutating func failed(error: JSONValue, retryAfter: Double? = nil, atLeast: Double = 0) -> Double {
        failures += 1
        lastError = error
        let delay = max(backoff.delay(afterFailures: failures), min(retryAfter ?? 0, maxSeconds), atLeast)
        retryAt = .now + .milliseconds(Int64(delay * 1000))
        return delay
    }

    mutating func succeeded() {
        moved()
        failures = 0
        unreachable = false
        lastError = nil
    }

    /// Records left the queue.
    mutating func moved() {
        movedAt = .now
    }

    /// Seconds until the next attempt while one is scheduled in the future.
    var secondsToRetry: Double? {
        guard let retryAt, retryAt > .now else { return nil }
        let left = ContinuousClock.now.duration(to: retryAt)
        return Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18
    }

    /// The health gate's "the queue is moving or the origin is known unreachable": nil when
    /// nothing waits, when records are being delivered or when the origin cannot be reached (the
    /// box is offline: the plays wait, as they should). Else why the queue is stuck, in words.
    func healthProblem(pending: Int, stopped: Bool) -> String? {
        guard pending > 0 else { return nil }
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
