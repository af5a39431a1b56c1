/// A parsed HLS playlist (RFC 8216): a master playlist naming variants and renditions, or a
/// media playlist naming segments. URIs are kept exactly as written, relative or not; the caller
/// resolves them against the playlist's own URL (`HLSURL.resolve`).
public enum HLSPlaylist: Sendable, Equatable {
    case master(HLSMasterPlaylist)
    case media(HLSMediaPlaylist)
}

/// `#EXT-X-STREAM-INF` entries and the `#EXT-X-MEDIA` renditions they refer to.
public struct HLSMasterPlaylist: Sendable, Equatable {
    public var variants: [HLSVariant]
    public var renditions: [HLSRendition]
    /// `#EXT-X-I-FRAME-STREAM-INF` playlists (trick play); listed, never needed for playback.
    public var iFramePlaylistURIs: [String]
    public var independentSegments: Bool

    /// Renditions of `type` in `groupId`, in playlist order.
    public func renditions(_ type: HLSRendition.MediaType, group: String) -> [HLSRendition] {
        renditions.filter { $0.type == type && $0.groupId == group }
    }
}

public struct HLSVariant: Sendable, Equatable {
    public var uri: String
    /// Peak bits per second (`BANDWIDTH`, required).
    public var bandwidth: Int
    public var averageBandwidth: Int?
    /// `RESOLUTION=WxH`.
    public var resolution: HLSResolution?
    /// `CODECS`, split at commas (`["avc1.42c00d", "mp4a.40.2"]`).
    public var codecs: [String]
    public var frameRate: Double?
    /// `AUDIO`, `VIDEO`, `SUBTITLES`, `CLOSED-CAPTIONS` group ids (`CLOSED-CAPTIONS=NONE` is nil).
    public var audioGroup: String?
    public var videoGroup: String?
    public var subtitlesGroup: String?
    public var closedCaptionsGroup: String?
    /// 1-based line of the URI, for messages.
    public var line: Int

    /// True when the variant carries video: a `RESOLUTION`, a video codec, or a video group.
    public var hasVideo: Bool {
        if resolution != nil || videoGroup != nil { return true }
        return codecs.contains { codec in
            ["avc1", "avc3", "hvc1", "hev1", "vp09", "av01", "dvh1", "dvhe", "mp4v"].contains { codec.hasPrefix($0) }
        }
    }
}

public struct HLSResolution: Sendable, Equatable, CustomStringConvertible {
    public var width: Int
    public var height: Int
    public var description: String { "\(width)x\(height)" }
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }
}

/// An `#EXT-X-MEDIA` alternative rendition.
public struct HLSRendition: Sendable, Equatable {
    public enum MediaType: String, Sendable, Equatable {
        case audio = "AUDIO", video = "VIDEO", subtitles = "SUBTITLES", closedCaptions = "CLOSED-CAPTIONS"
    }

    public var type: MediaType
    public var groupId: String
    public var name: String
    public var language: String?
    public var isDefault: Bool
    public var autoselect: Bool
    public var forced: Bool
    /// nil: the rendition is carried inside the variant's own segments (a muxed track).
    public var uri: String?
    public var line: Int
}

/// A media playlist: its segments in order, each with the key and init section in force.
public struct HLSMediaPlaylist: Sendable, Equatable {
    public var targetDuration: Int
    public var mediaSequence: Int
    public var version: Int?
    /// `VOD` or `EVENT`; nil when absent.
    public var playlistType: String?
    /// `#EXT-X-ENDLIST` is present: no segment will be added.
    public var hasEndList: Bool
    public var segments: [HLSSegment]

    /// Every distinct resource the playlist needs (segments, init sections), first use first,
    /// each with the largest byte range end any entry reads from it (nil: read whole).
    public var resources: [HLSResource] {
        var order: [String] = []
        var ends: [String: Int64?] = [:]
        func note(_ uri: String, _ range: HLSByteRange?) {
            if ends[uri] == nil {
                order.append(uri)
                ends[uri] = .some(range.map { $0.offset + $0.length })
            } else if let old = ends[uri]! {
                ends[uri] = range.map { max(old, $0.offset + $0.length) }
            }
        }
        for segment in segments {
            if let map = segment.map { note(map.uri, map.byteRange) }
            note(segment.uri, segment.byteRange)
        }
        return order.map { HLSResource(uri: $0, rangeEnd: ends[$0]!) }
    }

    /// Every distinct key URI (`METHOD` other than `NONE`), first use first.
    public var keyURIs: [String] {
        var seen = Set<String>()
        return segments.compactMap { $0.key?.uri }.filter { seen.insert($0).inserted }
    }

    public var totalDuration: Double { segments.reduce(0) { $0 + $1.duration } }

    /// Average bits per second of the presentation this playlist plays: the bytes its segments
    /// read (a byte range's length, else the whole resource's `size`) and each distinct init
    /// section once, over the sum of its `EXTINF` durations. Measured rather than declared, so
    /// a rendition playlist (which no `BANDWIDTH` describes) has one too, and it means what a
    /// progressive file's size over its length means. nil when a size is unknown or the
    /// playlist lasts no time.
    public func averageBitRate(size: (String) -> Int64?) -> Int? {
        let seconds = totalDuration
        guard seconds > 0, !segments.isEmpty else { return nil }
        func length(_ uri: String, _ range: HLSByteRange?) -> Int64? { range?.length ?? size(uri) }
        var bytes: Int64 = 0
        var maps: [HLSMap] = []
        for segment in segments {
            if let map = segment.map, !maps.contains(map) {
                guard let mapBytes = length(map.uri, map.byteRange) else { return nil }
                bytes += mapBytes
                maps.append(map)
            }
            guard let segmentBytes = length(segment.uri, segment.byteRange) else { return nil }
            bytes += segmentBytes
        }
        return Int((Double(bytes) * 8 / seconds).rounded())
    }
}

/// One resource a media playlist reads, with the end of the largest byte range read from it.
public struct HLSResource: Sendable, Equatable {
    public var uri: String
    /// nil when some entry reads the whole resource.
    public var rangeEnd: Int64?
    public init(uri: String, rangeEnd: Int64?) {
        self.uri = uri
        self.rangeEnd = rangeEnd
    }
}

public struct HLSSegment: Sendable, Equatable {
    public var uri: String
    public var duration: Double
    public var title: String?
    public var byteRange: HLSByteRange?
    public var key: HLSKey?
    public var map: HLSMap?
    public var discontinuity: Bool
    /// The segment's media sequence number.
    public var sequence: Int
    public var line: Int
}

public struct HLSByteRange: Sendable, Equatable {
    public var length: Int64
    public var offset: Int64
    public init(length: Int64, offset: Int64) {
        self.length = length
        self.offset = offset
    }
}

/// `#EXT-X-KEY` in force for a segment (`METHOD=NONE` is no key at all).
public struct HLSKey: Sendable, Equatable {
    public enum Method: String, Sendable, Equatable { case aes128 = "AES-128", sampleAES = "SAMPLE-AES" }
    public var method: Method
    public var uri: String
    /// The 16 IV bytes when given (`IV=0x…`).
    public var iv: [UInt8]?
    public var keyFormat: String?
}

/// `#EXT-X-MAP`: the init section (fMP4 `ftyp`/`moov`) for the segments after it.
public struct HLSMap: Sendable, Equatable {
    public var uri: String
    public var byteRange: HLSByteRange?
}
