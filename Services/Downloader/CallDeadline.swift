import OriginClient

/// The moment a socket call that makes several origin requests must be answered by: the
/// interactive deadline (`RetryPolicy.interactive`, 8 s) counted from the call's start. Each
/// request's retry policy is cut to the time left, so the call ends by then, with
/// `OriginUnreachable` (1010) at worst, however many requests it makes.
struct CallDeadline: Sendable {
    let end: ContinuousClock.Instant

    init(seconds: Double = RetryPolicy.interactive.deadlineSeconds ?? 8) {
        end = .now + .milliseconds(Int64(seconds * 1000))
    }

    var hasPassed: Bool { ContinuousClock.now >= end }

    /// `policy`, whose requests (attempts and waits) end by the call's deadline.
    func bounding(_ policy: RetryPolicy) -> RetryPolicy {
        policy.ending(by: end)
    }
}
