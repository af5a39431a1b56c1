import XCTest

@testable import cassettectl

final class RateMeterTests: XCTestCase {
    func testRateAndETAOverTheWindow() throws {
        var meter = RateMeter(window: 8)
        meter.add(0, at: 100)
        XCTAssertNil(meter.rate, "one sample says nothing")
        meter.add(500_000, at: 100.5)
        XCTAssertNil(meter.rate, "less than a second says nothing")
        meter.add(1_000_000, at: 101)
        XCTAssertEqual(try XCTUnwrap(meter.rate), 1_000_000, accuracy: 1)
        XCTAssertEqual(try XCTUnwrap(meter.eta(remaining: 3_000_000)), 3, accuracy: 0.01)
    }

    func testRateFallsWhenNothingArrives() throws {
        var meter = RateMeter(window: 4)
        meter.add(0, at: 0)
        meter.add(4000, at: 2)
        XCTAssertEqual(try XCTUnwrap(meter.rate), 2000, accuracy: 1)
        for t in stride(from: 3.0, through: 10, by: 1) { meter.add(4000, at: t) }
        XCTAssertEqual(meter.rate, 0)
        XCTAssertNil(meter.eta(remaining: 100))
        XCTAssertEqual(meter.idle(at: 10), 8)
    }

    func testACountThatGoesDownStartsOver() {
        var meter = RateMeter()
        meter.add(0, at: 0)
        meter.add(9000, at: 3)
        meter.add(0, at: 4)
        XCTAssertTrue(meter.restarted)
        XCTAssertNil(meter.rate)
        meter.add(100, at: 5)
        XCTAssertFalse(meter.restarted)
    }

    func testProgressText() {
        XCTAssertEqual(
            ProgressText.bytes(done: 1_200_000, total: 3_000_000, rate: 250_000, waiting: nil),
            "1.2 MB of 3.0 MB, 250 kB/s, ETA 7 s")
        XCTAssertEqual(ProgressText.bytes(done: 1_200_000, total: 3_000_000, rate: nil, waiting: nil), "1.2 MB of 3.0 MB")
        XCTAssertEqual(
            ProgressText.bytes(done: 1_200_000, total: 3_000_000, rate: 0, waiting: StallReason(code: "NoNetwork", detail: nil)),
            "1.2 MB of 3.0 MB, waiting: no network")
        XCTAssertEqual(
            ProgressText.files(done: 3, total: 12, failed: 1, rate: 0.4, waiting: nil),
            "3/12 files, 1 failed, 24.0 files/min, ETA 20 s")
        XCTAssertEqual(ProgressText.files(done: 3, total: 12, failed: 0, rate: 2, waiting: nil), "3/12 files, 2.0 files/s, ETA 4 s")
        XCTAssertEqual(
            ProgressText.files(done: 3, total: 12, failed: 0, rate: 2, waiting: StallReason(code: "CellularNotAllowed", detail: "x")),
            "3/12 files, waiting: cellular not allowed")
    }
}
