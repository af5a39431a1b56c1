/// How long delivery waits after consecutive failures: exponential from `initial` to `cap`
/// (1 s … 5 min by default), each wait spread by ±`jitter` so that many devices coming back
/// after an outage do not hit the origin in step. Never below `initial` nor above `cap`.
struct BackoffSchedule: Sendable, Equatable {
    var initial: Double
    var cap: Double
    /// Fraction of the nominal wait added or taken away at random (0.2 → 80 %…120 %).
    var jitter: Double = 0.2

    /// The wait before attempt `failures + 1`, without jitter: initial · 2^(failures−1), capped.
    func nominal(afterFailures failures: Int) -> Double {
        guard failures > 0 else { return 0 }
        let doublings = min(failures - 1, 62)
        return min(cap, initial * Double(1 << doublings))
    }

    /// The nominal wait, jittered by `unit` (a random number in 0…1), kept inside initial…cap.
    func delay(afterFailures failures: Int, unit: Double = Double.random(in: 0...1)) -> Double {
        guard failures > 0 else { return 0 }
        let spread = nominal(afterFailures: failures) * (1 - jitter + 2 * jitter * min(max(unit, 0), 1))
        return min(cap, max(initial, spread))
    }
}
