import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Local wall-clock arithmetic, as the download windows are read: days that start at local
/// midnight, times of day that follow daylight-saving changes.
protocol WallClock: Sendable {
    /// The local midnight that starts `date`'s day.
    func startOfDay(_ date: Date) -> Date
    /// The local midnight `days` days after the local midnight `day`.
    func day(_ days: Int, after day: Date) -> Date
    /// `date`'s local day of the week: 1 = Sunday … 7 = Saturday.
    func weekday(_ date: Date) -> Int
    /// The wall-clock time `seconds` (0…86399) after the local midnight `day`; a time a
    /// daylight-saving change skips moves on past the gap.
    func time(_ seconds: Int, on day: Date) -> Date
    /// `2026-06-01T22:00:00+02:00`: the local time with its offset.
    func timestamp(_ date: Date) -> String
}

/// The device's local time zone through the C library (`TZ`, else `/etc/localtime`, read once
/// per process): Foundation's `Calendar` and date formatters would leave megabytes of ICU's
/// data resident in the daemon for what is a few calls of `localtime_r` and `mktime`.
struct LocalWallClock: WallClock {
    func startOfDay(_ date: Date) -> Date { time(0, on: date) }

    func day(_ days: Int, after day: Date) -> Date {
        var parts = Self.parts(day)
        parts.tm_mday += Int32(days)
        (parts.tm_hour, parts.tm_min, parts.tm_sec) = (0, 0, 0)
        return Self.date(&parts)
    }

    func weekday(_ date: Date) -> Int { Int(Self.parts(date).tm_wday) + 1 }

    func time(_ seconds: Int, on day: Date) -> Date {
        var parts = Self.parts(day)
        (parts.tm_hour, parts.tm_min, parts.tm_sec) = (Int32(seconds / 3600), Int32(seconds / 60 % 60), Int32(seconds % 60))
        return Self.date(&parts)
    }

    func timestamp(_ date: Date) -> String {
        let p = Self.parts(date)
        let offset = Int(p.tm_gmtoff)
        let zone = (offset < 0 ? "-" : "+") + Self.two(abs(offset) / 3600) + ":" + Self.two(abs(offset) / 60 % 60)
        return "\(p.tm_year + 1900)-\(Self.two(Int(p.tm_mon) + 1))-\(Self.two(Int(p.tm_mday)))T"
            + "\(Self.two(Int(p.tm_hour))):\(Self.two(Int(p.tm_min))):\(Self.two(Int(p.tm_sec)))\(zone)"
    }

    static func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }

    private static func parts(_ date: Date) -> tm {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        localtime_r(&seconds, &parts)
        return parts
    }

    /// `mktime` with the daylight-saving flag left to it, so that a wall-clock time maps to the
    /// offset in force then (the day's own, not the one `parts` came from).
    private static func date(_ parts: inout tm) -> Date {
        parts.tm_isdst = -1
        return Date(timeIntervalSince1970: TimeInterval(mktime(&parts)))
    }
}
