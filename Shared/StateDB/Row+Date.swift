import Foundation
import GRDB
import Wire

extension Row {
    /// A date column read by hand (`UTCTimestamp.parseDatabase`), not as GRDB's `Date`, whose
    /// decoding builds a Gregorian calendar that opens ICU's locale data: 3–4 MiB resident in
    /// a daemon for one date read. A number is seconds since 1970, as GRDB reads one; NULL, a
    /// blob and a column the row does not have are nil.
    public func date(_ column: String) -> Date? {
        guard let value = self[column] as DatabaseValue? else { return nil }
        switch value.storage {
        case .string(let text): return UTCTimestamp.parseDatabase(text)
        case .int64(let seconds): return Date(timeIntervalSince1970: TimeInterval(seconds))
        case .double(let seconds): return Date(timeIntervalSince1970: seconds)
        case .null, .blob: return nil
        }
    }
}
