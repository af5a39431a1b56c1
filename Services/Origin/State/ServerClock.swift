import Foundation
import Synchronization

/// The origin's notion of "now": the wall clock plus an offset that `/_control/clock` sets,
/// so expiry tests can jump days ahead without waiting. Every timestamp the origin emits
/// (`serverTime`, the `Date` header, expiries, rentals) goes through here.
final class ServerClock: Sendable {
    private let offset = Mutex<Double>(0)

    var offsetSeconds: Double {
        get { offset.withLock { $0 } }
    }

    func setOffset(_ seconds: Double) {
        offset.withLock { $0 = seconds }
    }

    func now() -> Date {
        Date().addingTimeInterval(offset.withLock { $0 })
    }

    /// RFC 3339 in UTC with millisecond precision, e.g. `2026-01-02T03:04:05.678Z`.
    static func rfc3339(_ date: Date) -> String {
        let seconds = date.timeIntervalSince1970
        var whole = time_t(seconds.rounded(.down))
        let millis = min(999, Int(((seconds - Double(whole)) * 1000).rounded(.down)))
        var parts = tm()
        gmtime_r(&whole, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
            Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
            Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), millis)
    }

    /// The HTTP `Date` header form (RFC 9110 IMF-fixdate), e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
    static func httpDate(_ date: Date) -> String {
        var whole = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&whole, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let time = String(format: "%02d:%02d:%02d", Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
        let day = String(format: "%02d", Int(parts.tm_mday))
        return "\(days[Int(parts.tm_wday)]), \(day) \(months[Int(parts.tm_mon)]) \(Int(parts.tm_year) + 1900) \(time) GMT"
    }
}
