import Foundation
import Wire

/// Short human forms of values in tables (JSON output keeps the raw values).
enum Format {
    /// A value on one line: strings bare, `-` for null or absent, yes/no for booleans, arrays
    /// and objects as JSON.
    static func text(_ value: JSONValue?) -> String {
        switch value {
        case nil, .null?: return "-"
        case .string(let s)?: return s
        case .bool(let b)?: return b ? "yes" : "no"
        case .number(let n)?:
            if let i = JSONValue.number(n).intValue { return String(i) }
            return String((n * 1000).rounded() / 1000)
        case .array(let a)? where a.isEmpty: return "-"
        case let other?: return CtlOutput.compact(other)
        }
    }

    /// A value shown by what its key says it is: `maxCacheBytes` 2.0 GB (2000000000 bytes),
    /// `uptimeSeconds` 3 h 12 min, `expiresAt` 2026-11-24 14:03 (local time).
    static func keyed(_ key: String, _ value: JSONValue?) -> String {
        switch value {
        case .number(let n)? where key.hasSuffix("Bytes"):
            return n.magnitude < 1000 ? bytes(n) : "\(bytes(n)) (\(text(value)) bytes)"
        case .number(let n)? where key.hasSuffix("Seconds") && n >= 60:
            return HumanTime.duration(n)
        case .string? where key.hasSuffix("At") || key.hasSuffix("Until"):
            return date(value)
        default:
            return text(value)
        }
    }

    /// `m:ss` (or `h:mm:ss`): positions and lengths of tracks.
    static func duration(_ seconds: Double?) -> String {
        guard let seconds, seconds.isFinite, seconds >= 0 else { return "-" }
        let total = Int(seconds.rounded(.down))
        let (h, m, s) = (total / 3600, total / 60 % 60, total % 60)
        return h > 0 ? String(format: "%d:%02d:%02d", h, m, s) : String(format: "%d:%02d", m, s)
    }

    /// Decimal units (see `ByteSize`).
    static func bytes(_ count: Double?) -> String { ByteSize.format(count) }

    /// An RFC 3339 time as local time, `2026-11-24 14:03`.
    static func date(_ value: JSONValue?) -> String {
        guard let string = value?.stringValue else { return text(value) }
        return HumanTime.date(string)
    }
}
