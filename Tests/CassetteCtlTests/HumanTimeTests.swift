import Foundation
import XCTest

@testable import cassettectl

final class HumanTimeTests: XCTestCase {
    func testDurationsUseTheTwoLargestUnits() {
        XCTAssertEqual(HumanTime.duration(0), "0 s")
        XCTAssertEqual(HumanTime.duration(42.9), "42 s")
        XCTAssertEqual(HumanTime.duration(60), "1 min")
        XCTAssertEqual(HumanTime.duration(303), "5 min 3 s")
        XCTAssertEqual(HumanTime.duration(3 * 3600 + 12 * 60 + 59), "3 h 12 min")
        XCTAssertEqual(HumanTime.duration(7200), "2 h")
        XCTAssertEqual(HumanTime.duration(2 * 86400 + 4 * 3600 + 5), "2 d 4 h")
        XCTAssertEqual(HumanTime.duration(nil), "-")
        XCTAssertEqual(HumanTime.duration(-1), "-")
        XCTAssertEqual(HumanTime.duration(.infinity), "-")
    }

    func testDatesInLocalTime() throws {
        let utc = try XCTUnwrap(TimeZone(identifier: "UTC"))
        let berlin = try XCTUnwrap(TimeZone(identifier: "Europe/Berlin"))
        XCTAssertEqual(HumanTime.date("2026-11-24T13:03:00.000Z", in: utc), "2026-11-24 13:03")
        XCTAssertEqual(HumanTime.date("2026-11-24T13:03:00.000Z", in: berlin), "2026-11-24 14:03")
        XCTAssertEqual(HumanTime.date("2026-11-24T13:03:59Z", in: utc), "2026-11-24 13:03")
        XCTAssertEqual(HumanTime.date("2026-06-01T23:30:00+02:00", in: utc), "2026-06-01 21:30")
        XCTAssertEqual(HumanTime.date("not a date", in: utc), "not a date")
    }

    func testKeyedValuesAreShownByTheirKey() {
        XCTAssertEqual(Format.keyed("maxCacheBytes", .number(2_000_000_000)), "2.0 GB (2000000000 bytes)")
        XCTAssertEqual(Format.keyed("minFreeBytes", .number(512)), "512 B")
        XCTAssertEqual(Format.keyed("maxCacheBytes", .null), "-")
        XCTAssertEqual(Format.keyed("uptimeSeconds", .number(11_520)), "3 h 12 min")
        XCTAssertEqual(Format.keyed("retryInSeconds", .number(5)), "5")
        XCTAssertEqual(Format.keyed("allowCellular", .bool(true)), "yes")
        XCTAssertEqual(Format.keyed("expiresAt", .string("nonsense")), "nonsense")
        XCTAssertNotEqual(Format.keyed("expiresAt", .string("2026-11-24T13:03:00Z")), "2026-11-24T13:03:00Z")
    }
}
