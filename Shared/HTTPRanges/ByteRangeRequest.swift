/// A `Range` request header (RFC 9110 §14.2) for one representation of `size` bytes: the one
/// parser of the reference origin and the player's local media server. Single byte ranges
/// only: a header that is not one well-formed `bytes=` range (several ranges, another unit,
/// last before first) is ignored and the whole representation served, as the RFC allows.
public enum ByteRangeRequest: Equatable, Sendable {
    case whole
    case range(offset: Int64, length: Int64)
    /// 416: the range starts at or past the end (or asks for the last 0 bytes).
    case unsatisfiable

    public static func parse(_ header: String?, size: Int64) -> ByteRangeRequest {
        guard let header else { return .whole }
        let value = trimmed(header)
        guard value.lowercased().hasPrefix("bytes=") else { return .whole }
        let spec = trimmed(value.dropFirst("bytes=".count))
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .whole }
        let first = trimmed(spec[..<dash])
        let last = trimmed(spec[spec.index(after: dash)...])
        if first.isEmpty {
            // A suffix: the last N bytes.
            guard let count = Int64(last), count >= 0 else { return .whole }
            guard count > 0, size > 0 else { return .unsatisfiable }
            let length = min(count, size)
            return .range(offset: size - length, length: length)
        }
        guard let start = Int64(first), start >= 0 else { return .whole }
        var end = size - 1
        if !last.isEmpty {
            guard let requested = Int64(last), requested >= start else { return .whole }
            end = min(requested, size - 1)
        }
        guard start < size else { return .unsatisfiable }
        return .range(offset: start, length: end - start + 1)
    }
}

/// Without the blanks a header value may carry around its parts (RFC 9110 §5.6.3: OWS).
private func trimmed<S: StringProtocol>(_ text: S) -> String {
    var view = Substring(text)
    while let c = view.first, c == " " || c == "\t" { view = view.dropFirst() }
    while let c = view.last, c == " " || c == "\t" { view = view.dropLast() }
    return String(view)
}
