import Foundation
import Wire
import XCTest

@testable import downloader

/// A `WallClock` of a given zone, through Foundation's calendar (the test process may use ICU).
struct CalendarWallClock: WallClock {
    let calendar: Calendar
    var timeZone: TimeZone { calendar.timeZone }

    func startOfDay(_ date: Date) -> Date { calendar.startOfDay(for: date) }
    func day(_ days: Int, after day: Date) -> Date { calendar.date(byAdding: .day, value: days, to: day)! }
    func weekday(_ date: Date) -> Int { calendar.component(.weekday, from: date) }
    func time(_ seconds: Int, on day: Date) -> Date {
        calendar.date(bySettingHour: seconds / 3600, minute: seconds / 60 % 60, second: seconds % 60, of: day)!
    }
    func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = calendar.timeZone
        return formatter.string(from: date)
    }
}

/// The download window rule without a clock: which window is open at a given local time, when
/// the next opens, and the limit in force.
final class DownloadWindowRuleTests: XCTestCase {
    private func calendar(_ zone: String) -> CalendarWallClock {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: zone)!
        return CalendarWallClock(calendar: calendar)
    }

    private func date(_ text: String, _ calendar: CalendarWallClock) -> Date {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = calendar.timeZone
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter.date(from: text)!
    }

    private func window(_ json: JSONValue) throws -> DownloadWindow {
        try DownloadWindow.parse(json, field: "w")
    }

    func testADayCrossingWindowBelongsToTheDayItStarts() throws {
        let cal = calendar("Europe/Berlin")
        // 2026-06-05 is a Friday.
        let weekdays = DownloadWindows(
            windows: [try window(["days": ["mon", "tue", "wed", "thu", "fri"], "from": "22:00", "to": "06:00"])],
            maxBytesPerSecond: 1_000_000)
        XCTAssertTrue(weekdays.state(at: date("2026-06-05 23:00:00", cal), clock: cal).isOpen, "Friday night")
        XCTAssertTrue(weekdays.state(at: date("2026-06-06 05:59:59", cal), clock: cal).isOpen, "Friday's window runs into Saturday")
        XCTAssertFalse(weekdays.state(at: date("2026-06-06 06:00:00", cal), clock: cal).isOpen, "the end is not in it")
        XCTAssertFalse(weekdays.state(at: date("2026-06-06 23:00:00", cal), clock: cal).isOpen, "Saturday night")
        XCTAssertFalse(weekdays.state(at: date("2026-06-08 03:00:00", cal), clock: cal).isOpen, "Monday early: Sunday has none")
        // Closed on Saturday at noon: the next opens on Monday at 22:00, local time.
        let state = weekdays.state(at: date("2026-06-06 12:00:00", cal), clock: cal)
        XCTAssertEqual(state, .closed(opensAt: date("2026-06-08 22:00:00", cal), next: weekdays.windows[0]))
        XCTAssertTrue(DownloadWindows.reason(state, clock: cal).contains("2026-06-08T22:00:00+02:00"), DownloadWindows.reason(state, clock: cal))
        XCTAssertEqual(
            weekdays.state(at: date("2026-06-05 23:00:00", cal), clock: cal),
            .open(limit: 1_000_000, closesAt: date("2026-06-06 06:00:00", cal)))
    }

    func testWholeDaysOverlapsAndTheirLimits() throws {
        let cal = calendar("UTC")
        let schedule = DownloadWindows(
            windows: [
                try window(["days": ["sat", "sun"], "from": "00:00", "to": "24:00", "maxBytesPerSecond": 5_000_000]),
                try window(["days": ["sun"], "from": "10:00", "to": "10:00", "maxBytesPerSecond": 100_000]),
            ], maxBytesPerSecond: nil)
        // Sunday 12:00: both open, the more generous limit wins.
        XCTAssertEqual(
            schedule.state(at: date("2026-06-07 12:00:00", cal), clock: cal),
            .open(limit: 5_000_000, closesAt: date("2026-06-08 10:00:00", cal)))
        // Monday 09:00: only Sunday's 24-hour window (from == to) is open.
        if case .open(let limit, _) = schedule.state(at: date("2026-06-08 09:00:00", cal), clock: cal) {
            XCTAssertEqual(limit, 100_000)
        } else {
            XCTFail("Sunday's whole-day window runs until Monday 10:00")
        }
        XCTAssertFalse(schedule.state(at: date("2026-06-08 10:00:00", cal), clock: cal).isOpen)
        // No windows: always open, at the policy's limit.
        XCTAssertEqual(DownloadWindows(windows: [], maxBytesPerSecond: 42_000).state(at: Date()), .open(limit: 42_000, closesAt: nil))
    }

    func testWindowsThatTouchRunOnAndAreSummedUpShortly() throws {
        let cal = calendar("UTC")
        let weekend = DownloadWindows(
            windows: [
                try window(["days": ["sun"], "from": "00:00", "to": "24:00"]),
                try window(["days": ["sat"], "from": "00:00", "to": "00:00"]),
            ], maxBytesPerSecond: nil)
        XCTAssertEqual(
            weekend.state(at: date("2026-06-06 12:00:00", cal), clock: cal),
            .open(limit: nil, closesAt: date("2026-06-08 00:00:00", cal)), "Saturday's window goes on into Sunday's")
        let always = DownloadWindows(
            windows: [try window(["days": ["mon", "tue", "wed", "thu", "fri", "sat", "sun"], "from": "00:00", "to": "24:00"])],
            maxBytesPerSecond: nil)
        XCTAssertEqual(always.state(at: Date(), clock: cal), .open(limit: nil, closesAt: nil))
        XCTAssertEqual(always.windows[0].summary, "daily 00:00-24:00")
        XCTAssertEqual(
            try window(["days": ["sun", "fri", "tue", "mon", "wed"], "from": "22:00", "to": "06:00:30"]).summary,
            "mon-wed,fri,sun 22:00-06:00:30")
        XCTAssertEqual(weekend.windows[1].json["days"], ["sat"])
        XCTAssertEqual(try window(["days": ["sun", "sat"], "from": "00:00", "to": "24:00"]).json["days"], ["sat", "sun"])
    }

    func testWindowsFollowTheWallClockAcrossDaylightSaving() throws {
        let cal = calendar("Europe/Berlin")
        // 2026-03-29: clocks go from 02:00 to 03:00. A window of 01:00-04:00 is two real hours long.
        let night = DownloadWindows(windows: [try window(["days": ["sun"], "from": "01:00", "to": "04:00"])], maxBytesPerSecond: nil)
        let open = night.state(at: date("2026-03-29 03:30:00", cal), clock: cal)
        XCTAssertEqual(open, .open(limit: nil, closesAt: date("2026-03-29 04:00:00", cal)))
        XCTAssertFalse(night.state(at: date("2026-03-29 04:00:00", cal), clock: cal).isOpen)
    }

    /// The daemon's own clock (the C library's, under `TZ`) agrees with Foundation's calendar
    /// around daylight-saving changes, in zones east and west.
    func testTheCLibrarysLocalTimeAgreesWithTheCalendar() throws {
        let saved = getenv("TZ").map { String(cString: $0) }
        defer {
            if let saved { setenv("TZ", saved, 1) } else { unsetenv("TZ") }
            tzset()
        }
        for zone in ["Europe/Berlin", "America/New_York", "Asia/Kolkata"] {
            setenv("TZ", zone, 1)
            tzset()
            let reference = calendar(zone), local = LocalWallClock()
            for text in [
                "2026-03-29 01:30:00", "2026-03-29 03:30:00", "2026-03-08 01:59:59", "2026-03-08 03:00:00",
                "2026-10-25 02:30:00", "2026-11-01 01:30:00", "2026-06-05 23:59:59", "2026-12-31 00:00:00",
            ] {
                let instant = date(text, reference)
                let day = reference.startOfDay(instant)
                XCTAssertEqual(local.startOfDay(instant), day, "\(zone) \(text)")
                XCTAssertEqual(local.weekday(instant), reference.weekday(instant), "\(zone) \(text)")
                XCTAssertEqual(local.day(1, after: day), reference.day(1, after: day), "\(zone) \(text)")
                XCTAssertEqual(local.time(22 * 3600 + 30 * 60, on: day), reference.time(22 * 3600 + 30 * 60, on: day), "\(zone) \(text)")
                XCTAssertEqual(local.time(3 * 3600, on: day), reference.time(3 * 3600, on: day), "\(zone) \(text)")
                XCTAssertEqual(local.timestamp(instant), reference.timestamp(instant), "\(zone) \(text)")
            }
        }
    }

    func testParsingNamesTheField() throws {
        XCTAssertEqual(try window(["days": ["Mon", "mon"], "from": "22:00:30", "to": "24:00"]).days, [.mon])
        func refusal(_ json: JSONValue) -> String {
            do {
                _ = try DownloadWindow.parse(json, field: "w")
                return "accepted"
            } catch { return error.message }
        }
        XCTAssertTrue(refusal(["days": ["mon"], "from": "24:00", "to": "06:00"]).hasPrefix("w.from "))
        XCTAssertTrue(refusal(["days": ["mon"], "from": "7:00", "to": "08:00"]).hasPrefix("w.from "))
        XCTAssertTrue(refusal(["days": ["mon"], "from": "07:60", "to": "08:00"]).hasPrefix("w.from "))
        XCTAssertTrue(refusal(["days": ["mon"], "from": "07:00", "to": "24:01"]).hasPrefix("w.to "))
        XCTAssertTrue(refusal(["days": "mon", "from": "07:00", "to": "08:00"]).hasPrefix("w.days "))
        XCTAssertTrue(refusal(["days": ["mon"], "from": "07:00", "to": "08:00", "maxBytesPerSecond": 1.5]).hasPrefix("w.maxBytesPerSecond "))
        XCTAssertTrue(refusal("mon 07:00-08:00").hasPrefix("w must be an object"))
    }

    /// The stored policy keeps its windows; one stored before the keys existed gets none.
    func testThePolicyStoresItsWindows() throws {
        var policy = DownloadPolicy()
        policy = try policy.applying([
            "downloadWindows": [["days": ["fri"], "from": "22:00", "to": "06:00", "maxBytesPerSecond": 20_000]],
            "maxBytesPerSecond": 16_384,
        ])
        let decoded = try JSONDecoder().decode(DownloadPolicy.self, from: try JSONEncoder().encode(policy))
        XCTAssertEqual(decoded, policy)
        let old = try JSONDecoder().decode(DownloadPolicy.self, from: Data(#"{"allowCellular":true}"#.utf8))
        XCTAssertEqual(old.downloadWindows, [])
        XCTAssertNil(old.maxBytesPerSecond)
        XCTAssertNil(try policy.applying(["maxBytesPerSecond": .null, "downloadWindows": .null]).maxBytesPerSecond)
    }
}
