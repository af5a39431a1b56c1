/// Resolving the URIs a playlist names against the playlist's own URL (RFC 3986 5.2, for the
/// forms playlists use: absolute, scheme-relative, absolute-path and relative references).
public enum HLSURL {
    /// `reference` resolved against `base` (an absolute `http(s)://` URL, or a path from the
    /// root such as `/media/vid-1/master.m3u8`, which gives a path from the root too). The result
    /// keeps the reference's query; dot segments are removed. Nil when `base` is neither, or a
    /// scheme-relative reference (`//host/…`) meets a path-only base.
    public static func resolve(_ reference: String, against base: String) -> String? {
        if hasScheme(reference) { return reference }
        if base.hasPrefix("/"), !base.hasPrefix("//") {
            guard !reference.hasPrefix("//") else { return nil }
            return resolve(reference, against: "x://x" + base).map { String($0.dropFirst("x://x".count)) }
        }
        guard let schemeEnd = separator(in: base) else { return nil }
        let scheme = base[..<schemeEnd.lowerBound]
        let afterScheme = base[schemeEnd.upperBound...]
        let authorityEnd: String.Index = afterScheme.firstIndex { (c: Character) in c == "/" || c == "?" || c == "#" } ?? afterScheme.endIndex
        let authority = afterScheme[..<authorityEnd]
        var basePath = String(afterScheme[authorityEnd...])
        if let cut = basePath.firstIndex(where: { (c: Character) in c == "?" || c == "#" }) { basePath = String(basePath[..<cut]) }
        if basePath.isEmpty { basePath = "/" }
        if reference.hasPrefix("//") { return "\(scheme):\(reference)" }
        let (refPath, refQuery) = splitQuery(reference)
        let merged: String
        if refPath.hasPrefix("/") {
            merged = refPath
        } else if refPath.isEmpty {
            merged = basePath
        } else {
            let directory = basePath[...basePath.lastIndex(of: "/")!]
            merged = directory + refPath
        }
        return "\(scheme)://\(authority)\(removeDotSegments(merged))\(refQuery)"
    }

    /// The path of an absolute URL, without query or fragment.
    public static func path(of url: String) -> String {
        guard let schemeEnd = separator(in: url) else { return splitQuery(url).path }
        let rest = url[schemeEnd.upperBound...]
        guard let slash = rest.firstIndex(of: "/") else { return "/" }
        return splitQuery(String(rest[slash...])).path
    }

    /// The range of the first `://`.
    private static func separator(in text: String) -> Range<String.Index>? {
        var index = text.startIndex
        while index < text.endIndex {
            if text[index...].hasPrefix("://") { return index..<text.index(index, offsetBy: 3) }
            index = text.index(after: index)
        }
        return nil
    }

    private static func hasScheme(_ text: String) -> Bool {
        guard let colon = text.firstIndex(of: ":") else { return false }
        let scheme = text[..<colon]
        guard let first = scheme.utf8.first, (65...90).contains(first) || (97...122).contains(first) else { return false }
        return scheme.utf8.allSatisfy { (65...90).contains($0) || (97...122).contains($0) || (48...57).contains($0) || $0 == 43 || $0 == 45 || $0 == 46 }
    }

    private static func splitQuery(_ text: String) -> (path: String, query: String) {
        var text = text
        if let hash = text.firstIndex(of: "#") { text = String(text[..<hash]) }
        guard let question = text.firstIndex(of: "?") else { return (text, "") }
        return (String(text[..<question]), String(text[question...]))
    }

    private static func removeDotSegments(_ path: String) -> String {
        var output: [Substring] = []
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        for (index, part) in parts.enumerated() {
            let last = index == parts.count - 1
            switch part {
            case ".": if last { output.append("") }
            case "..":
                if output.count > 1 { output.removeLast() }
                if last { output.append("") }
            default: output.append(part)
            }
        }
        let joined = output.joined(separator: "/")
        return joined.hasPrefix("/") ? joined : "/" + joined
    }
}
