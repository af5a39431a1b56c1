/// The one retry curve of every service: after `failures` failures in a row, wait `initial`
/// doubled each time, never more than `cap`; each wait may be spread by ±`jitter` so that
/// many devices coming back after an outage do not hit the origin in step. Callers choose
/// their parameters in one line (the origin client's quick retries, the download queue's wait
/// on a failing origin, play-log delivery, the player's hand-over to the reporter).
public struct Backoff: Sendable, Equatable {
    public var initial: Double
    public var cap: Double
    /// Fraction of the nominal wait added or taken away at random (0.2 → 80 %…120 %).
    public var jitter: Double

    public init(initial: Double, cap: Double, jitter: Double = 0) {
        self.initial = initial
        self.cap = cap
        self.jitter = jitter
    }

    /// The wait before attempt `failures + 1`, without jitter: initial · 2^(failures−1), capped;
    /// 0 before any failure.
    public func nominal(afterFailures failures: Int) -> Double {
        guard failures > 0 else { return 0 }
        let doublings = min(failures - 1, 62)
        return min(cap, initial * Double(1 << doublings))
    }

    /// The nominal wait, jittered by `unit` (a random number in 0…1), kept inside initial…cap.
    public func delay(afterFailures failures: Int, unit: Double = Double.random(in: 0...1)) -> Double {
        guard failures > 0 else { return 0 }
        guard jitter > 0 else { return nominal(afterFailures: failures) }
        let spread = nominal(afterFailures: failures) * (1 - jitter + 2 * jitter * min(max(unit, 0), 1))
        return min(cap, max(initial, spread))
    }

    /// A curve in `Duration`s: `initial`, doubled up to `doublings` times.
    public init(initial: Duration, doublings: Int, jitter: Double = 0) {
        let seconds = Double(initial.components.seconds) + Double(initial.components.attoseconds) / 1e18
        self.init(initial: seconds, cap: seconds * Double(1 << doublings), jitter: jitter)
    }

    /// `delay(afterFailures:)` as a `Duration`.
    public func duration(afterFailures failures: Int) -> Duration {
        .milliseconds(Int64((delay(afterFailures: failures) * 1000).rounded()))
    }
}
