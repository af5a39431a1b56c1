import Wire
import XCTest

@testable import cassettectl

final class WindowArgumentTests: XCTestCase {
    func testWindowsAsAnOperatorWritesThem() throws {
        let weekdays = try XCTUnwrap(WindowArgument(argument: "mon-fri 22:00-06:00")?.window)
        XCTAssertEqual(weekdays, ["days": ["mon", "tue", "wed", "thu", "fri"], "from": "22:00", "to": "06:00"])
        // A range across the week's end, a list, and a rate of the window's own.
        let weekend = try XCTUnwrap(WindowArgument(argument: "fri-mon,wed  00:00-24:00 5M")?.window)
        XCTAssertEqual(weekend["days"], ["sun", "mon", "wed", "fri", "sat"])
        XCTAssertEqual(weekend["maxBytesPerSecond"], .number(5_000_000))
        XCTAssertEqual(WindowArgument(argument: "daily 01:00-05:00 500k/s")?.window?["days"]?.arrayValue?.count, 7)
        XCTAssertEqual(WindowArgument(argument: "none"), WindowArgument(argument: "NONE"))
        XCTAssertNil(try XCTUnwrap(WindowArgument(argument: "none")).window)
        // The service checks the times; the command only splits them.
        for bad in ["", "mon", "funday 22:00-06:00", "mon 22:00", "mon 22:00-", "mon 22:00-06:00 fast", "mon 1-2 3M x"] {
            XCTAssertNil(WindowArgument(argument: bad), bad)
        }
    }

    func testRates() {
        XCTAssertEqual(RateArgument(argument: "2M")?.bytesPerSecond, 2_000_000)
        XCTAssertEqual(RateArgument(argument: "1.5MiB/s")?.bytesPerSecond, 1_572_864)
        XCTAssertEqual(RateArgument(argument: "none"), RateArgument(argument: "unlimited"))
        XCTAssertNil(RateArgument(argument: "fast"))
    }

    func testPolicyShowsWindowsInWords() {
        let text = Policy.render([
            "maxBytesPerSecond": 2_000_000,
            "downloadWindows": [
                [
                    "days": ["mon", "tue"], "from": "22:00", "to": "06:00",
                    "maxBytesPerSecond": 500_000,
                ]
            ],
            "downloadWindow": ["open": false, "opensAt": "2026-06-01T22:00:00+02:00", "limit": 2_000_000],
        ])
        XCTAssertTrue(text.contains("mon,tue 22:00-06:00 at most 500 kB/s"), text)
        XCTAssertTrue(text.contains("closed until "), text)
        XCTAssertTrue(text.contains("2.0 MB/s") || text.contains("2 MB/s"), text)
        XCTAssertTrue(Policy.render(["downloadWindows": []]).contains("none (downloads at any time)"))
    }

    func testOutsideTheWindowsIsAWaitInWords() throws {
        let wait = try XCTUnwrap(StallReason.item(error: "OutsideDownloadWindow", reason: "the next opens at 2026-06-01T22:00:00+02:00"))
        XCTAssertEqual(wait.short, "outside the download windows")
        XCTAssertTrue(wait.message.contains("22:00") && wait.message.contains("--now"), wait.message)
    }
}
