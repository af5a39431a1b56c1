import Foundation
import Wire

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

    /// The HTTP `Date` header (IMF-fixdate). Every response carries one, so the usual form is
    /// read by hand; a `DateFormatter` (costly to make) is only the fallback for anything else.
    public static func parseHTTPDate(_ text: String) -> Date? {
        if let date = parseIMFFixdate(text) { return date }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: text)
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT` exactly (RFC 9110 §5.6.7), else nil.
    static func parseIMFFixdate(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count == 29, bytes[3] == UInt8(ascii: ","), bytes[4] == 32, bytes[7] == 32, bytes[11] == 32,
              bytes[16] == 32, bytes[19] == UInt8(ascii: ":"), bytes[22] == UInt8(ascii: ":"), bytes[25] == 32,
              String(decoding: bytes[26...], as: UTF8.self) == "GMT" else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for byte in bytes[range] {
                guard (48...57).contains(byte) else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            return value
        }
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        guard let monthIndex = months.firstIndex(of: String(decoding: bytes[8..<11], as: UTF8.self)),
              let day = number(5..<7), let year = number(12..<16), let hour = number(17..<19),
              let minute = number(20..<22), let second = number(23..<25),
              (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        let days = UTCTimestamp.daysSinceEpoch(year: year, month: monthIndex + 1, day: day)
        return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + hour * 3_600 + minute * 60 + second))
    }
}
