/// Rewrites the URIs of a playlist's text — URI lines and every `URI="…"` attribute — leaving
/// every other byte as it was, so a player sees the origin's playlist pointing elsewhere (the
/// player's local media server).
public enum HLSRewriter {
    /// What a URI refers to, for the mapping closure.
    public enum Reference: Sendable, Equatable {
        case variant, rendition, iFramePlaylist, key, map, segment
    }

    /// The rewritten text. `map` gives a reference's new URI, or nil when it is not available:
    /// in a master playlist the variant or rendition is left out; in a media playlist the
    /// playlist ends before the first segment that needs it and `#EXT-X-ENDLIST` is dropped
    /// (`truncated`), so a player sees a presentation still growing.
    public static func rewrite(_ text: String, map: (String, Reference) -> String?) -> (text: String, truncated: Bool) {
        let lines = HLSLines(text)
        let isMaster = text.contains("#EXT-X-STREAM-INF")
        var output: [Substring] = []
        var pending: [Substring] = [] // tags since the last URI line
        var truncated = false
        let groups = isMaster ? survivingGroups(lines, map: map) : []
        for line in lines {
            let text = line.text
            if text.isEmpty { continue }
            if text.hasPrefix("#") {
                if isMaster {
                    if text.hasPrefix("#EXT-X-STREAM-INF") {
                        pending = [Substring(removingDeadGroups(text, surviving: groups))]
                        continue
                    }
                    let kind: Reference? =
                        text.hasPrefix("#EXT-X-MEDIA:")
                        ? .rendition
                        : text.hasPrefix("#EXT-X-I-FRAME-STREAM-INF") ? .iFramePlaylist : nil
                    guard let kind else {
                        output.append(text)
                        continue
                    }
                    if let rewritten = replaceURIAttribute(text, kind: kind, map: map) {
                        if let rewritten { output.append(Substring(rewritten)) }
                    } else {
                        output.append(text) // a rendition without URI (muxed)
                    }
                    continue
                }
                if text.hasPrefix("#EXT-X-ENDLIST") {
                    pending.append(text)
                    continue
                }
                let kind: Reference? = text.hasPrefix("#EXT-X-KEY") ? .key : text.hasPrefix("#EXT-X-MAP") ? .map : nil
                if let kind, let rewritten = replaceURIAttribute(text, kind: kind, map: map) {
                    guard let rewritten else {
                        truncated = true
                        break
                    }
                    pending.append(Substring(rewritten))
                } else {
                    pending.append(text)
                }
                continue
            }
            // A URI line.
            if isMaster {
                if let uri = map(String(text), .variant) {
                    output.append(contentsOf: pending)
                    output.append(Substring(uri))
                }
                pending = []
                continue
            }
            guard let uri = map(String(text), .segment) else {
                truncated = true
                break
            }
            output.append(contentsOf: pending)
            output.append(Substring(uri))
            pending = []
        }
        if !truncated { output.append(contentsOf: pending) }
        var result = output.filter { !(truncated && $0.hasPrefix("#EXT-X-ENDLIST")) }.joined(separator: "\n")
        if !result.hasSuffix("\n") { result += "\n" }
        return (result, truncated)
    }

    /// `TYPE/GROUP-ID` of the renditions left in the rewritten master playlist.
    private static func survivingGroups(_ lines: HLSLines, map: (String, Reference) -> String?) -> Set<String> {
        var groups = Set<String>()
        for line in lines where line.text.hasPrefix("#EXT-X-MEDIA:") {
            let kept = replaceURIAttribute(line.text, kind: .rendition, map: map).map { $0 != nil } ?? true
            guard kept, let a = try? HLSAttributes(line.text.dropFirst("#EXT-X-MEDIA:".count), line: line.number),
                let type = try? a.enumerated("TYPE", line: 0), let group = try? a.string("GROUP-ID", line: 0)
            else { continue }
            groups.insert("\(type)/\(group)")
        }
        return groups
    }

    /// An `EXT-X-STREAM-INF` line without the `AUDIO`, `VIDEO` or `SUBTITLES` attribute whose
    /// group lost every rendition (a player refuses a variant naming a group that does not exist).
    static func removingDeadGroups(_ line: Substring, surviving: Set<String>) -> String {
        guard let colon = line.firstIndex(of: ":") else { return String(line) }
        var kept: [Substring] = []
        var start = line.index(after: colon)
        var index = start
        var inQuotes = false
        func flush(_ end: String.Index) {
            let attribute = line[start..<end]
            let name = attribute.split(separator: "=", maxSplits: 1).first ?? ""
            let type = ["AUDIO": "AUDIO", "VIDEO": "VIDEO", "SUBTITLES": "SUBTITLES"][String(name)]
            if let type, let equals = attribute.firstIndex(of: "=") {
                let group = attribute[attribute.index(after: equals)...].filter { $0 != "\"" }
                if !surviving.contains("\(type)/\(group)") { return }
            }
            kept.append(attribute)
        }
        while index < line.endIndex {
            let c = line[index]
            if c == "\"" {
                inQuotes.toggle()
            } else if c == ",", !inQuotes {
                flush(index)
                start = line.index(after: index)
            }
            index = line.index(after: index)
        }
        flush(line.endIndex)
        return String(line[...colon]) + kept.joined(separator: ",")
    }

    /// The tag with its `URI` attribute's value replaced: `.some(nil)` when `map` refuses it,
    /// nil when the tag has no `URI` attribute.
    static func replaceURIAttribute(_ line: Substring, kind: Reference, map: (String, Reference) -> String?) -> String?? {
        guard let colon = line.firstIndex(of: ":") else { return nil }
        var index = line.index(after: colon)
        var nameStart = index
        var inQuotes = false
        while index < line.endIndex {
            let c = line[index]
            if inQuotes {
                if c == "\"" { inQuotes = false }
            } else if c == "\"" {
                inQuotes = true
            } else if c == "," {
                nameStart = line.index(after: index)
            } else if c == "=", line[nameStart..<index] == "URI" {
                let valueStart = line.index(after: index)
                guard valueStart < line.endIndex, line[valueStart] == "\"" else { return nil }
                let bodyStart = line.index(after: valueStart)
                guard let close = line[bodyStart...].firstIndex(of: "\"") else { return nil }
                guard let replacement = map(String(line[bodyStart..<close]), kind) else { return .some(nil) }
                return .some(String(line[..<bodyStart]) + replacement + String(line[close...]))
            }
            index = line.index(after: index)
        }
        return nil
    }
}
