import Pacing
import XCTest

/// The one retry curve every service uses.
final class BackoffTests: XCTestCase {
    func testNominalDoublesFromOneSecondToFiveMinutes() {
        let schedule = Backoff(initial: 1, cap: 300)
        XCTAssertEqual(schedule.nominal(afterFailures: 0), 0)
        XCTAssertEqual((1...11).map { schedule.nominal(afterFailures: $0) }, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300])
        XCTAssertEqual(schedule.nominal(afterFailures: 10_000), 300, "no overflow after very many failures")
    }

    func testJitterStaysWithinBoundsAndSpreads() {
        let schedule = Backoff(initial: 1, cap: 300, jitter: 0.2)
        for failures in 1...20 {
            let nominal = schedule.nominal(afterFailures: failures)
            XCTAssertEqual(schedule.delay(afterFailures: failures, unit: 0), max(1, nominal * 0.8), accuracy: 1e-9)
            XCTAssertEqual(schedule.delay(afterFailures: failures, unit: 1), min(300, nominal * 1.2), accuracy: 1e-9)
            for _ in 0..<50 {
                let d = schedule.delay(afterFailures: failures)
                XCTAssertGreaterThanOrEqual(d, 1)
                XCTAssertLessThanOrEqual(d, 300)
                XCTAssertGreaterThanOrEqual(d, min(300, nominal * 0.8) - 1e-9)
            }
        }
        let samples = Set((0..<100).map { _ in schedule.delay(afterFailures: 6) })
        XCTAssertGreaterThan(samples.count, 50, "jitter spreads the waits")
    }
}
