import Foundation
import Wire
import XCTest

final class UTCTimestampTests: XCTestCase {
    /// RFC 3339 written and read by hand: the same instants Foundation's ISO 8601 formatter
    /// writes and reads, offsets and fractions included, and nothing that is not RFC 3339.
    func testRFC3339TimesAgreeWithFoundationsFormatter() throws {
        let foundation = ISO8601DateFormatter()
        foundation.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for seconds in [0, 1_763_719_200.5, 951_782_400.25, 4_102_444_799.125, -86_400.75, 1_709_251_199] as [TimeInterval] {
            let date = Date(timeIntervalSince1970: seconds)
            XCTAssertEqual(UTCTimestamp.rfc3339(date), foundation.string(from: date), "\(seconds)")
            XCTAssertEqual(UTCTimestamp.parseRFC3339(UTCTimestamp.rfc3339(date))?.timeIntervalSince1970, seconds)
        }
        XCTAssertEqual(
            UTCTimestamp.rfc3339(Date(timeIntervalSince1970: 1_764_000_000.123)), "2025-11-24T16:00:00.123Z",
            "to the nearest millisecond")
        let read: [(String, TimeInterval)] = [
            ("2026-11-25T06:39:32Z", 1_795_588_772), ("2026-11-25t06:39:32z", 1_795_588_772),
            ("2026-11-25T08:39:32+02:00", 1_795_588_772), ("2026-11-25T01:09:32-05:30", 1_795_588_772),
            ("2026-11-25T06:39:32.5Z", 1_795_588_772.5), ("2024-02-29T23:59:59.123456789Z", 1_709_251_199.123456789),
        ]
        for (text, seconds) in read {
            let parsed = try XCTUnwrap(UTCTimestamp.parseRFC3339(text), text)
            XCTAssertEqual(parsed.timeIntervalSince1970, seconds, accuracy: 1e-6, text)
            // RFC 3339 also allows a lower-case "t" and "z", which Foundation does not read.
            guard text == text.uppercased() else { continue }
            XCTAssertEqual(
                parsed.timeIntervalSince1970, try XCTUnwrap(foundation.date(from: text) ?? ISO8601DateFormatter().date(from: text)).timeIntervalSince1970,
                accuracy: 1e-3, text)
        }
        for bad in [
            "", "2026-11-25", "2026-11-25T06:39:32", "2026-13-01T00:00:00Z", "2025-02-29T00:00:00Z",
            "2026-11-25T24:00:00Z", "2026-11-25T06:39:32.Z", "2026-11-25T06:39:32+0200", "2026-11-25T06:39:32Zx",
            " 2026-11-25T06:39:32Z", "2026-11-25 06:39:32Z", "+2026-11-25T06:39:32Z",
        ] {
            XCTAssertNil(UTCTimestamp.parseRFC3339(bad), bad)
        }
    }

    /// Any `Date` can be written: one outside the four-digit years (a client's absurd number)
    /// becomes the nearest end of them instead of trapping.
    func testDatesBeyondFourDigitYearsAreWrittenAtTheEnds() {
        for seconds in [1e15, .infinity, .greatestFiniteMagnitude] {
            XCTAssertEqual(UTCTimestamp.rfc3339(Date(timeIntervalSince1970: seconds)), "9999-12-31T23:59:59.999Z")
        }
        for seconds in [-1e15, -.infinity, -.greatestFiniteMagnitude] {
            XCTAssertEqual(UTCTimestamp.rfc3339(Date(timeIntervalSince1970: seconds)), "0000-01-01T00:00:00.000Z")
        }
        XCTAssertEqual(UTCTimestamp.rfc3339(Date(timeIntervalSince1970: .nan)), "1970-01-01T00:00:00.000Z")
        XCTAssertEqual(Date.distantFuture.databaseText, "4001-01-01 00:00:00.000")
        XCTAssertEqual(UTCTimestamp.parseRFC3339("9999-12-31T23:59:59.999Z")?.timeIntervalSince1970 ?? 0, 253_402_300_799.999, accuracy: 1e-3)
        XCTAssertEqual(UTCTimestamp.parseRFC3339("0000-01-01T00:00:00Z")?.timeIntervalSince1970, -62_167_219_200)
    }
}
