/// Why a playlist was refused. `code` is the stable name other modules log and put on the wire
/// (`reason` of a failed download); `line` is 1-based (0 when the playlist as a whole is wrong).
public struct HLSError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, Equatable {
        /// The text does not start with `#EXTM3U`.
        case missingHeader = "HLSMissingHeader"
        /// Larger than `HLSLimits.maxPlaylistBytes`, more lines or entries than allowed.
        case tooLarge = "HLSTooLarge"
        /// Not UTF-8, or holds control characters.
        case badEncoding = "HLSBadEncoding"
        /// An attribute list that does not follow the grammar (quotes, names, duplicates).
        case badAttributeList = "HLSBadAttributeList"
        /// A required attribute is absent (`BANDWIDTH`, `TYPE`, `GROUP-ID`, `NAME`, `URI`, `METHOD`).
        case missingAttribute = "HLSMissingAttribute"
        /// An attribute or tag value of the wrong kind (a negative duration, `RESOLUTION=wide`).
        case badValue = "HLSBadValue"
        /// A tag that needs a URI line after it (`EXT-X-STREAM-INF`, `EXTINF`) has none.
        case missingURI = "HLSMissingURI"
        /// A URI line that no tag announced, or a URI with characters a URI never holds.
        case unexpectedURI = "HLSUnexpectedURI"
        /// Master tags and media segment tags in one playlist.
        case mixedPlaylist = "HLSMixedPlaylist"
        /// Neither variants nor segments.
        case emptyPlaylist = "HLSEmptyPlaylist"
        /// A media playlist without `EXT-X-TARGETDURATION`, or a segment longer than it.
        case badTargetDuration = "HLSBadTargetDuration"
        /// A variant naming an `AUDIO`/`SUBTITLES` group no `EXT-X-MEDIA` defines.
        case unknownGroup = "HLSUnknownGroup"
        /// `EXT-X-BYTERANGE` without an offset and no earlier range of the same resource.
        case badByteRange = "HLSBadByteRange"
        /// A tag given twice where once is the rule (`EXT-X-TARGETDURATION`, `EXT-X-ENDLIST`).
        case duplicateTag = "HLSDuplicateTag"
    }

    public var code: Code
    public var line: Int
    public var message: String

    public init(_ code: Code, line: Int, _ message: String) {
        self.code = code
        self.line = line
        self.message = message
    }

    /// The stable name (`HLSBadAttributeList`, …).
    public var name: String { code.rawValue }

    public var description: String { line > 0 ? "\(name) at line \(line): \(message)" : "\(name): \(message)" }
}

/// Bounds on what the parser accepts, so a hostile origin cannot make it use unbounded memory.
public enum HLSLimits {
    /// A playlist's size in bytes (a 10-hour VOD at 2 s segments is about 2 MB).
    public static let maxPlaylistBytes = 8 << 20
    /// Segments in one media playlist, variants or renditions in one master playlist.
    public static let maxEntries = 100_000
    /// One URI's length.
    public static let maxURIBytes = 4_096
}
