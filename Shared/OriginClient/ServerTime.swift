import Foundation

/// A server time as received, anchored to the boot clock at the moment it arrived, so the time
/// used for expiry can be carried forward without trusting the device's wall clock
/// (docs/origin.md, "Common rules").
public struct ServerTimeSample: Sendable, Equatable {
    public var serverTime: Date
    /// CLOCK_BOOTTIME in nanoseconds when the answer arrived (keeps counting through suspend).
    public var bootNanos: UInt64

    public init(serverTime: Date, bootNanos: UInt64 = ServerTimeSample.bootClockNanos()) {
        self.serverTime = serverTime
        self.bootNanos = bootNanos
    }

    public static func bootClockNanos() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_BOOTTIME, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }

    /// RFC 3339 in UTC with milliseconds, as the origin writes its times: for the timestamps the
    /// services put in results, events and play records.
    public static func formatRFC3339(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    /// RFC 3339 as the origin writes it, with or without fractional seconds.
    public static func parseRFC3339(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }

    /// The HTTP `Date` header (IMF-fixdate).
    public static func parseHTTPDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: text)
    }
}
