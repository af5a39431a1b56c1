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

    /// `policy`, whose whole request (attempts and waits) must end within the time left.
    func bounding(_ policy: RetryPolicy) -> RetryPolicy {
        let left = ContinuousClock.now.duration(to: end)
        let seconds = Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18
        var bounded = policy
        bounded.deadlineSeconds = min(policy.deadlineSeconds ?? .infinity, seconds)
        return bounded
    }
}
