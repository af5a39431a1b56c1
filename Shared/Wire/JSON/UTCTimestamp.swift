import Foundation

/// UTC timestamps in the fixed forms the services read and write: RFC 3339 (the origin's
/// times, and the ones put in results, events and play records), the text GRDB stores a `Date`
/// as, and the HTTP `Date` header's IMF-fixdate. Written by hand: Foundation's `ISO8601DateFormatter`, `DateFormatter` and even
/// `Date.ISO8601FormatStyle` open ICU calendars and time zones, which leaves 2–5 MiB of ICU's
/// data resident in a daemon for what is a few lines of calendar arithmetic.
public enum UTCTimestamp {
    /// `2026-11-25T06:39:32.123Z`: RFC 3339 in UTC, to the nearest millisecond.
    public static func rfc3339(_ date: Date) -> String {
        text(date, separator: UInt8(ascii: "T"), zone: "Z")
    }

    /// `2026-11-25 06:39:32.123`: how GRDB writes a `Date` (and reads one back).
    static func database(_ date: Date) -> String {
        text(date, separator: UInt8(ascii: " "), zone: "")
    }

    /// RFC 3339: `yyyy-MM-ddTHH:mm:ss`, optional fractional seconds, then `Z` or an offset
    /// (`+hh:mm`, `-hh:mm`). Nil for anything else.
    public static func parseRFC3339(_ text: String) -> Date? {
        parse(text, rfc3339: true)
    }

    /// A date as a catalog column holds it: `database`'s form, and the shorter ones SQLite's
    /// date functions write (`yyyy-MM-dd`, `yyyy-MM-dd HH:mm`, `yyyy-MM-dd HH:mm:ss`, `T` or a
    /// space between date and time, an optional zone), all read as UTC unless a zone says
    /// otherwise. Nil for anything else.
    public static func parseDatabase(_ text: String) -> Date? {
        parse(text, rfc3339: false)
    }

    /// The two forms share their fields; RFC 3339 wants all of them, a database date only its day.
    private static func parse(_ text: String, rfc3339: Bool) -> Date? {
        var text = text
        return text.withUTF8 { bytes -> Date? in
            var reader = DigitReader(bytes: bytes)
            guard let year = reader.number(4), reader.skip("-"), let month = reader.number(2), reader.skip("-"),
                let day = reader.number(2), (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day)
            else { return nil }
            var seconds = daysSinceEpoch(year: year, month: month, day: day) * 86_400
            if !rfc3339, reader.atEnd { return Date(timeIntervalSince1970: TimeInterval(seconds)) }
            guard reader.skip("T") || reader.skip("t") || (!rfc3339 && reader.skip(" ")),
                let hour = reader.number(2), reader.skip(":"), let minute = reader.number(2),
                hour < 24, minute < 60
            else { return nil }
            seconds += hour * 3_600 + minute * 60
            var fraction = 0.0
            if reader.skip(":") {
                guard let second = reader.number(2), second < 61 else { return nil }
                seconds += second
                if reader.skip(".") {
                    // Nanoseconds at most; further digits are read and dropped.
                    var value = 0, scale = 1.0, digits = 0
                    while let digit = reader.number(1) {
                        if digits < 9 {
                            value = value * 10 + digit
                            scale *= 10
                        }
                        digits += 1
                    }
                    guard digits > 0 else { return nil }
                    fraction = Double(value) / scale
                }
            } else if rfc3339 {
                return nil
            }
            if reader.skip("Z") || reader.skip("z") {
                // UTC
            } else if let sign = reader.skip("+") ? 1 : reader.skip("-") ? -1 : nil {
                guard let hours = reader.number(2), reader.skip(":"), let minutes = reader.number(2),
                    hours < 24, minutes < 60
                else { return nil }
                seconds -= sign * (hours * 3_600 + minutes * 60)
            } else if rfc3339 {
                return nil
            }
            guard reader.atEnd else { return nil }
            return Date(timeIntervalSince1970: TimeInterval(seconds) + fraction)
        }
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT` exactly (IMF-fixdate, RFC 9110 §5.6.7: the form of every
    /// HTTP `Date` header), else nil. The day's name is not checked.
    public static func parseIMFFixdate(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { bytes -> Date? in
            var reader = DigitReader(bytes: bytes)
            guard reader.take(3) != nil, reader.skip(","), reader.skip(" "), let day = reader.number(2), reader.skip(" "),
                let name = reader.take(3), let month = monthNames.firstIndex(where: { $0.utf8.elementsEqual(name) }),
                reader.skip(" "), let year = reader.number(4), reader.skip(" "),
                let hour = reader.number(2), reader.skip(":"), let minute = reader.number(2), reader.skip(":"),
                let second = reader.number(2), reader.skip(" "), reader.take(3)?.elementsEqual("GMT".utf8) == true,
                reader.atEnd, (1...31).contains(day), hour < 24, minute < 60, second < 61
            else { return nil }
            let days = daysSinceEpoch(year: year, month: month + 1, day: day)
            return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + hour * 3_600 + minute * 60 + second))
        }
    }

    private static let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
    private static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// The instants the four-digit forms can write: 0000-01-01 to 9999-12-31, in seconds since 1970.
    private static let writable = -62_167_219_200.0...253_402_300_799.999

    /// A date outside `writable` (or not finite) is written as the nearest end of it.
    private static func text(_ date: Date, separator: UInt8, zone: StaticString) -> String {
        let seconds = date.timeIntervalSince1970
        let clamped = seconds.isNaN ? 0 : min(max(seconds, writable.lowerBound), writable.upperBound)
        let total = Int64((clamped * 1000).rounded())
        let (quotient, remainder) = total.quotientAndRemainder(dividingBy: 1000)
        var whole = time_t(remainder < 0 ? quotient - 1 : quotient)
        let millis = Int(remainder < 0 ? remainder + 1000 : remainder)
        var parts = tm()
        _ = gmtime_r(&whole, &parts)
        // "yyyy-MM-dd?HH:mm:ss.SSS" is 23 bytes, then the zone.
        return String(unsafeUninitializedCapacity: 23 + zone.utf8CodeUnitCount) { (out: UnsafeMutableBufferPointer<UInt8>) -> Int in
            var at = 0
            func put(_ value: Int, _ width: Int) {
                var value = value
                for index in stride(from: at + width - 1, through: at, by: -1) {
                    out[index] = UInt8(ascii: "0") + UInt8(value % 10)
                    value /= 10
                }
                at += width
            }
            func put(byte: UInt8) {
                out[at] = byte
                at += 1
            }
            put(Int(parts.tm_year) + 1900, 4)
            put(byte: UInt8(ascii: "-"))
            put(Int(parts.tm_mon) + 1, 2)
            put(byte: UInt8(ascii: "-"))
            put(Int(parts.tm_mday), 2)
            put(byte: separator)
            put(Int(parts.tm_hour), 2)
            put(byte: UInt8(ascii: ":"))
            put(Int(parts.tm_min), 2)
            put(byte: UInt8(ascii: ":"))
            put(Int(parts.tm_sec), 2)
            put(byte: UInt8(ascii: "."))
            put(millis, 3)
            zone.withUTF8Buffer { for byte in $0 { put(byte: byte) } }
            return at
        }
    }
}

/// Reads fixed-width decimal fields and literal bytes from the front of a timestamp.
private struct DigitReader {
    let bytes: UnsafeBufferPointer<UInt8>
    var at = 0

    var atEnd: Bool { at == bytes.count }

    /// The next `width` bytes as a decimal number, if they are all digits (else nothing is read).
    mutating func number(_ width: Int) -> Int? {
        guard at + width <= bytes.count else { return nil }
        var value = 0
        for byte in bytes[at..<(at + width)] {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        at += width
        return value
    }

    /// The next `count` bytes, whatever they are (nothing is read when fewer are left).
    mutating func take(_ count: Int) -> UnsafeBufferPointer<UInt8>.SubSequence? {
        guard at + count <= bytes.count else { return nil }
        defer { at += count }
        return bytes[at..<(at + count)]
    }

    /// Steps over `literal` if it comes next.
    mutating func skip(_ literal: Unicode.Scalar) -> Bool {
        guard at < bytes.count, bytes[at] == UInt8(ascii: literal) else { return false }
        at += 1
        return true
    }
}

extension Date {
    /// This date as a catalog column holds it (`UTCTimestamp.database`). Bind this rather than
    /// the `Date`, which GRDB formats with an ICU-backed `DateFormatter`; GRDB reads it back
    /// as a `Date` all the same.
    public var databaseText: String { UTCTimestamp.database(self) }
}
