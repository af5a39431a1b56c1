// No Swift HLS parser is kept in the package mirror this project builds from (nor one with a
// maintained Linux release we could depend on), so this is a small strict one: it reads the tags
// Cassette needs to offline and serve a presentation (RFC 8216: master variants and renditions;
// media segments, byte ranges, keys, init sections, ENDLIST), ignores tags it does not know, as
// the RFC asks, and refuses anything malformed with a named `HLSError` instead of guessing.

/// Parses HLS playlists. Pure and synchronous: no I/O, bounded by `HLSLimits`.
public enum HLSParser {
    /// Parses `bytes` (the playlist as served). Throws `HLSError`.
    public static func parse(_ bytes: [UInt8]) throws -> HLSPlaylist {
        guard bytes.count <= HLSLimits.maxPlaylistBytes else {
            throw HLSError(.tooLarge, line: 0, "\(bytes.count) bytes, more than \(HLSLimits.maxPlaylistBytes)")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw HLSError(.badEncoding, line: 0, "the playlist is not UTF-8")
        }
        return try parse(text)
    }

    /// Parses playlist text. Throws `HLSError`.
    public static func parse(_ text: String) throws -> HLSPlaylist {
        guard text.utf8.count <= HLSLimits.maxPlaylistBytes else {
            throw HLSError(.tooLarge, line: 0, "\(text.utf8.count) bytes, more than \(HLSLimits.maxPlaylistBytes)")
        }
        let lines = HLSLines(text)
        guard let first = lines.first, first.text == "#EXTM3U" else {
            throw HLSError(.missingHeader, line: 1, "the first line must be #EXTM3U")
        }
        var parser = Parser()
        for line in lines.dropFirst() {
            try parser.consume(line.text, line: line.number)
        }
        return try parser.finish()
    }
}

/// The playlist's lines, LF or CRLF terminated, numbered from 1.
struct HLSLines: Sequence {
    struct Line {
        var text: Substring
        var number: Int
    }
    private let lines: [Line]

    init(_ text: String) {
        var result: [Line] = []
        var number = 0
        // Split on scalars: Swift treats "\r\n" as one Character, so a Character split misses CRLF.
        for raw in text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false) {
            number += 1
            result.append(Line(text: Substring(raw.last == "\r" ? raw.dropLast() : raw), number: number))
        }
        lines = result
    }

    var first: Line? { lines.first }
    func makeIterator() -> IndexingIterator<[Line]> { lines.makeIterator() }
    func dropFirst() -> ArraySlice<Line> { lines.dropFirst() }
}

private struct Parser {
    // Master state.
    var variants: [HLSVariant] = []
    var renditions: [HLSRendition] = []
    var iFrames: [String] = []
    var independent = false
    var pendingVariant: HLSVariant?
    var pendingVariantLine = 0
    var firstMasterLine: Int?

    // Media state.
    var targetDuration: Int?
    var mediaSequence = 0
    var sequenceSeen = false
    var version: Int?
    var playlistType: String?
    var endList = false
    var segments: [HLSSegment] = []
    var pendingInfo: (duration: Double, title: String?, line: Int)?
    var pendingRange: HLSByteRange?
    var pendingDiscontinuity = false
    var key: HLSKey?
    var map: HLSMap?
    /// Where the last byte range of each URI ended, for `EXT-X-BYTERANGE` without an offset.
    var lastRangeEnd: (uri: String, end: Int64)?
    var pendingRangeNeedsOffset = false
    var firstMediaLine: Int?

    mutating func consume(_ text: Substring, line: Int) throws {
        if text.isEmpty { return }
        if text.utf8.contains(where: { $0 < 0x20 && $0 != 0x09 || $0 == 0x7f }) {
            throw HLSError(.badEncoding, line: line, "control characters in the line")
        }
        if text.hasPrefix("#EXT") {
            try tag(text, line: line)
        } else if text.hasPrefix("#") {
            return // a comment
        } else {
            try uri(String(text), line: line)
        }
    }

    private mutating func tag(_ text: Substring, line: Int) throws {
        let colon = text.firstIndex(of: ":")
        let name = colon.map { text[..<$0] } ?? text
        let value = colon.map { text[text.index(after: $0)...] } ?? ""
        switch name {
        case "#EXTM3U":
            throw HLSError(.duplicateTag, line: line, "#EXTM3U given twice")
        case "#EXT-X-STREAM-INF":
            try masterLine(line)
            guard pendingVariant == nil else { throw HLSError(.missingURI, line: pendingVariantLine, "EXT-X-STREAM-INF without a URI line") }
            let a = try HLSAttributes(value, line: line)
            guard let bandwidth = try a.integer("BANDWIDTH", line: line) else {
                throw HLSError(.missingAttribute, line: line, "BANDWIDTH is required")
            }
            var resolution: HLSResolution?
            if let text = try a.enumerated("RESOLUTION", line: line) {
                let parts = text.split(separator: "x", omittingEmptySubsequences: false)
                guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), w > 0, h > 0, w <= 1 << 16, h <= 1 << 16 else {
                    throw HLSError(.badValue, line: line, "RESOLUTION=\(text.prefix(40)) is not WIDTHxHEIGHT")
                }
                resolution = HLSResolution(width: w, height: h)
            }
            let codecs =
                try a.string("CODECS", line: line).map {
                    $0.split(separator: ",").map { String($0).trimmingSpaces() }.filter { !$0.isEmpty }
                } ?? []
            var closedCaptions: String?
            switch a.values["CLOSED-CAPTIONS"] {
            case .quoted(let group)?: closedCaptions = group
            case .token("NONE")?, nil: closedCaptions = nil
            case .token?: throw HLSError(.badValue, line: line, "CLOSED-CAPTIONS must be a quoted group id or NONE")
            }
            pendingVariant = HLSVariant(
                uri: "", bandwidth: bandwidth, averageBandwidth: try a.integer("AVERAGE-BANDWIDTH", line: line),
                resolution: resolution, codecs: codecs, frameRate: try a.decimal("FRAME-RATE", line: line),
                audioGroup: try a.string("AUDIO", line: line), videoGroup: try a.string("VIDEO", line: line),
                subtitlesGroup: try a.string("SUBTITLES", line: line), closedCaptionsGroup: closedCaptions,
                line: line)
            pendingVariantLine = line
        case "#EXT-X-MEDIA":
            try masterLine(line)
            let a = try HLSAttributes(value, line: line)
            guard let typeText = try a.enumerated("TYPE", line: line) else { throw HLSError(.missingAttribute, line: line, "TYPE is required") }
            guard let type = HLSRendition.MediaType(rawValue: typeText) else {
                throw HLSError(.badValue, line: line, "TYPE=\(typeText.prefix(40)) is not AUDIO, VIDEO, SUBTITLES or CLOSED-CAPTIONS")
            }
            let uri = try a.string("URI", line: line)
            if type == .subtitles, uri == nil { throw HLSError(.missingAttribute, line: line, "a SUBTITLES rendition needs a URI") }
            if type == .closedCaptions, uri != nil { throw HLSError(.badValue, line: line, "a CLOSED-CAPTIONS rendition has no URI") }
            if let uri { try checkURI(uri, line: line) }
            let isDefault = try a.yesNo("DEFAULT", line: line) ?? false
            let autoselect = try a.yesNo("AUTOSELECT", line: line) ?? false
            if isDefault, a.values["AUTOSELECT"] != nil, !autoselect {
                throw HLSError(.badValue, line: line, "AUTOSELECT must be YES when DEFAULT is YES")
            }
            renditions.append(
                HLSRendition(
                    type: type, groupId: try a.requiredString("GROUP-ID", line: line),
                    name: try a.requiredString("NAME", line: line), language: try a.string("LANGUAGE", line: line),
                    isDefault: isDefault, autoselect: autoselect, forced: try a.yesNo("FORCED", line: line) ?? false,
                    uri: uri, line: line))
            try checkCount(renditions.count, line: line)
        case "#EXT-X-I-FRAME-STREAM-INF":
            try masterLine(line)
            let a = try HLSAttributes(value, line: line)
            let uri = try a.requiredString("URI", line: line)
            try checkURI(uri, line: line)
            iFrames.append(uri)
        case "#EXT-X-INDEPENDENT-SEGMENTS":
            independent = true
        case "#EXT-X-VERSION":
            guard let number = Int(value), number > 0, number < 100 else { throw HLSError(.badValue, line: line, "EXT-X-VERSION must be a small integer") }
            guard version == nil else { throw HLSError(.duplicateTag, line: line, "EXT-X-VERSION given twice") }
            version = number
        case "#EXT-X-TARGETDURATION":
            try mediaLine(line)
            guard targetDuration == nil else { throw HLSError(.duplicateTag, line: line, "EXT-X-TARGETDURATION given twice") }
            guard value.utf8.count <= 9, let seconds = Int(value), seconds >= 0 else {
                throw HLSError(.badValue, line: line, "EXT-X-TARGETDURATION must be whole seconds")
            }
            targetDuration = seconds
        case "#EXT-X-MEDIA-SEQUENCE":
            try mediaLine(line)
            guard !sequenceSeen else { throw HLSError(.duplicateTag, line: line, "EXT-X-MEDIA-SEQUENCE given twice") }
            guard segments.isEmpty, value.utf8.count <= 18, let number = Int(value), number >= 0 else {
                throw HLSError(.badValue, line: line, "EXT-X-MEDIA-SEQUENCE must be a non-negative integer before the first segment")
            }
            mediaSequence = number
            sequenceSeen = true
        case "#EXT-X-PLAYLIST-TYPE":
            try mediaLine(line)
            guard value == "VOD" || value == "EVENT" else { throw HLSError(.badValue, line: line, "EXT-X-PLAYLIST-TYPE must be VOD or EVENT") }
            playlistType = String(value)
        case "#EXTINF":
            try mediaLine(line)
            guard pendingInfo == nil else { throw HLSError(.missingURI, line: pendingInfo!.line, "EXTINF without a URI line") }
            let comma = value.firstIndex(of: ",")
            let number = comma.map { value[..<$0] } ?? value
            guard let duration = HLSNumber.decimal(number) else {
                throw HLSError(.badValue, line: line, "EXTINF duration \(String(number.prefix(40)).debugDescription) is not a non-negative decimal")
            }
            let title = comma.map { String(value[value.index(after: $0)...]) }.flatMap { $0.isEmpty ? nil : $0 }
            pendingInfo = (duration, title, line)
        case "#EXT-X-BYTERANGE":
            try mediaLine(line)
            let (range, hasOffset) = try byteRange(value, line: line)
            pendingRange = range
            pendingRangeNeedsOffset = !hasOffset
        case "#EXT-X-DISCONTINUITY":
            try mediaLine(line)
            pendingDiscontinuity = true
        case "#EXT-X-KEY":
            try mediaLine(line)
            let a = try HLSAttributes(value, line: line)
            guard let method = try a.enumerated("METHOD", line: line) else { throw HLSError(.missingAttribute, line: line, "METHOD is required") }
            if method == "NONE" {
                guard a.values["URI"] == nil else { throw HLSError(.badValue, line: line, "METHOD=NONE takes no URI") }
                key = nil
                return
            }
            guard let kind = HLSKey.Method(rawValue: method) else {
                throw HLSError(.badValue, line: line, "METHOD=\(method.prefix(40)) is not NONE, AES-128 or SAMPLE-AES")
            }
            let uri = try a.requiredString("URI", line: line)
            try checkURI(uri, line: line)
            var iv: [UInt8]?
            if let text = try a.enumerated("IV", line: line) {
                guard let bytes = HLSNumber.hexBytes(text), bytes.count == 16 else {
                    throw HLSError(.badValue, line: line, "IV must be 0x followed by 32 hex digits")
                }
                iv = bytes
            }
            key = HLSKey(method: kind, uri: uri, iv: iv, keyFormat: try a.string("KEYFORMAT", line: line))
        case "#EXT-X-MAP":
            try mediaLine(line)
            let a = try HLSAttributes(value, line: line)
            let uri = try a.requiredString("URI", line: line)
            try checkURI(uri, line: line)
            var range: HLSByteRange?
            if let text = try a.string("BYTERANGE", line: line) {
                let (parsed, hasOffset) = try byteRange(Substring(text), line: line)
                guard hasOffset else { throw HLSError(.badByteRange, line: line, "EXT-X-MAP BYTERANGE needs an offset") }
                range = parsed
            }
            map = HLSMap(uri: uri, byteRange: range)
        case "#EXT-X-ENDLIST":
            try mediaLine(line)
            guard !endList else { throw HLSError(.duplicateTag, line: line, "EXT-X-ENDLIST given twice") }
            endList = true
        default:
            return // RFC 8216 6.3.1: unknown tags are ignored
        }
    }

    private func byteRange(_ text: Substring, line: Int) throws -> (HLSByteRange, Bool) {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        func number(_ s: Substring) -> Int64? {
            guard !s.isEmpty, s.utf8.count <= 15, s.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
            return Int64(s)
        }
        guard (1...2).contains(parts.count), let length = number(parts[0]), length > 0 else {
            throw HLSError(.badByteRange, line: line, "byte range \(String(text.prefix(40)).debugDescription) is not LENGTH[@OFFSET]")
        }
        if parts.count == 2 {
            guard let offset = number(parts[1]) else { throw HLSError(.badByteRange, line: line, "byte range offset is not a number") }
            return (HLSByteRange(length: length, offset: offset), true)
        }
        return (HLSByteRange(length: length, offset: 0), false)
    }

    private mutating func uri(_ text: String, line: Int) throws {
        try checkURI(text, line: line)
        if var variant = pendingVariant {
            variant.uri = text
            variants.append(variant)
            try checkCount(variants.count, line: line)
            pendingVariant = nil
            return
        }
        guard let info = pendingInfo else {
            throw HLSError(.unexpectedURI, line: line, "a URI line that no EXTINF or EXT-X-STREAM-INF announced")
        }
        var range = pendingRange
        if pendingRangeNeedsOffset, var r = range {
            guard let last = lastRangeEnd, last.uri == text else {
                throw HLSError(.badByteRange, line: line, "EXT-X-BYTERANGE without an offset, and no earlier range of \(text.prefix(80))")
            }
            r.offset = last.end
            range = r
        }
        if let r = range { lastRangeEnd = (text, r.offset + r.length) } else { lastRangeEnd = nil }
        if let target = targetDuration, Int(info.duration.rounded()) > target {
            throw HLSError(.badTargetDuration, line: info.line, "a \(info.duration) s segment is longer than EXT-X-TARGETDURATION \(target)")
        }
        segments.append(
            HLSSegment(
                uri: text, duration: info.duration, title: info.title, byteRange: range, key: key, map: map,
                discontinuity: pendingDiscontinuity, sequence: mediaSequence + segments.count, line: line))
        try checkCount(segments.count, line: line)
        pendingInfo = nil
        pendingRange = nil
        pendingRangeNeedsOffset = false
        pendingDiscontinuity = false
    }

    private func checkURI(_ text: String, line: Int) throws {
        guard !text.isEmpty, text.utf8.count <= HLSLimits.maxURIBytes else {
            throw HLSError(.unexpectedURI, line: line, "a URI must have 1 to \(HLSLimits.maxURIBytes) bytes")
        }
        guard !text.utf8.contains(where: { $0 <= 0x20 || $0 == 0x22 || $0 == 0x7f }) else {
            throw HLSError(.unexpectedURI, line: line, "the URI \(String(text.prefix(80)).debugDescription) holds spaces, quotes or control characters")
        }
    }

    private func checkCount(_ count: Int, line: Int) throws {
        guard count <= HLSLimits.maxEntries else { throw HLSError(.tooLarge, line: line, "more than \(HLSLimits.maxEntries) entries") }
    }

    private mutating func masterLine(_ line: Int) throws {
        if let media = firstMediaLine { throw HLSError(.mixedPlaylist, line: line, "a master tag in a media playlist (media tags from line \(media))") }
        if firstMasterLine == nil { firstMasterLine = line }
    }

    private mutating func mediaLine(_ line: Int) throws {
        if let master = firstMasterLine { throw HLSError(.mixedPlaylist, line: line, "a media tag in a master playlist (master tags from line \(master))") }
        if firstMediaLine == nil { firstMediaLine = line }
    }

    func finish() throws -> HLSPlaylist {
        if pendingVariant != nil { throw HLSError(.missingURI, line: pendingVariantLine, "EXT-X-STREAM-INF without a URI line") }
        if let info = pendingInfo { throw HLSError(.missingURI, line: info.line, "EXTINF without a URI line") }
        if firstMasterLine != nil {
            guard !variants.isEmpty else { throw HLSError(.emptyPlaylist, line: 0, "a master playlist without EXT-X-STREAM-INF") }
            for variant in variants {
                for (type, group) in [
                    (HLSRendition.MediaType.audio, variant.audioGroup), (.video, variant.videoGroup),
                    (.subtitles, variant.subtitlesGroup), (.closedCaptions, variant.closedCaptionsGroup),
                ] {
                    guard let group else { continue }
                    guard renditions.contains(where: { $0.type == type && $0.groupId == group }) else {
                        throw HLSError(.unknownGroup, line: variant.line, "no \(type.rawValue) rendition in group \(group.prefix(60).debugDescription)")
                    }
                }
            }
            return .master(
                HLSMasterPlaylist(
                    variants: variants, renditions: renditions, iFramePlaylistURIs: iFrames,
                    independentSegments: independent))
        }
        guard firstMediaLine != nil else { throw HLSError(.emptyPlaylist, line: 0, "neither variants nor segments") }
        guard let targetDuration else { throw HLSError(.badTargetDuration, line: 0, "a media playlist without EXT-X-TARGETDURATION") }
        if let long = segments.first(where: { Int($0.duration.rounded()) > targetDuration }) {
            throw HLSError(.badTargetDuration, line: long.line, "a \(long.duration) s segment is longer than EXT-X-TARGETDURATION \(targetDuration)")
        }
        return .media(
            HLSMediaPlaylist(
                targetDuration: targetDuration, mediaSequence: mediaSequence, version: version,
                playlistType: playlistType, hasEndList: endList, segments: segments))
    }
}

extension String {
    func trimmingSpaces() -> String {
        var s = Substring(self)
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return String(s)
    }
}
