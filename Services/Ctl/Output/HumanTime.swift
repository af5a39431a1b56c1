import Foundation
import Wire

/// Lengths of time and dates for people (tables and messages; JSON keeps the raw values).
enum HumanTime {
    /// `42 s`, `5 min 3 s`, `3 h 12 min`, `2 d 4 h`: the two largest units, rounded down.
    static func duration(_ seconds: Double?) -> String {
        guard let seconds, seconds.isFinite, seconds >= 0 else { return "-" }
        let total = Int(seconds.rounded(.down))
        let (d, h, m, s) = (total / 86400, total / 3600 % 24, total / 60 % 60, total % 60)
        func pair(_ big: Int, _ bigUnit: String, _ small: Int, _ smallUnit: String) -> String {
            small > 0 ? "\(big) \(bigUnit) \(small) \(smallUnit)" : "\(big) \(bigUnit)"
        }
        if d > 0 { return pair(d, "d", h, "h") }
        if h > 0 { return pair(h, "h", m, "min") }
        if m > 0 { return pair(m, "min", s, "s") }
        return "\(s) s"
    }

    /// An RFC 3339 time (`2026-11-24T13:03:00.000Z`) as local time, `2026-11-24 14:03`; the
    /// text unchanged when it is not one.
    static func date(_ text: String, in zone: TimeZone = .current) -> String {
        guard let parsed = parse(text) else { return text }
        return date(parsed, in: zone)
    }

    static func date(_ date: Date, in zone: TimeZone = .current) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = zone
        formatter.dateFormat = "yyyy-MM-dd HH:mm"
        return formatter.string(from: date)
    }

    static func parse(_ text: String) -> Date? {
        UTCTimestamp.parseRFC3339(text)
    }
}
