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

    /// The server time carried forward on the boot clock to `bootNanos`, a later reading of it
    /// (the time passed since the sample arrived, suspend included); the sample itself for an
    /// earlier reading.
    public func carriedForward(to bootNanos: UInt64 = ServerTimeSample.bootClockNanos()) -> Date {
        guard bootNanos > self.bootNanos else { return serverTime }
        return serverTime.addingTimeInterval(Double(bootNanos - self.bootNanos) / 1e9)
    }

    public static func bootClockNanos() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_BOOTTIME, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }

    /// The HTTP `Date` header (IMF-fixdate). Every response carries one, so the usual form is
    /// read by hand; a `DateFormatter` (costly to make) is only the fallback for anything else.
    public static func parseHTTPDate(_ text: String) -> Date? {
        if let date = UTCTimestamp.parseIMFFixdate(text) { return date }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: text)
    }
}
