import OriginClient
import Wire

/// One file-backed item as the origin describes it (a station item, or a product's progressive
/// manifest), after `HostileInput` checked every field that reaches a path, a URL or the disk.
struct ManifestItem: Sendable, Equatable, Codable {
    var id: String
    /// The URL's path and query on the configured origin (the query may carry a signature),
    /// relative so that the file survives the origin's address changing (`OriginClient.mediaURL`).
    var url: String
    /// The URL's path only: the file's cache key (docs/origin.md, "Common rules").
    var urlPath: String
    var sizeBytes: Int64
    var sha256: String
    var mimeType: String?
    var title: String?
    var artist: String?
    var album: String?
    var durationSeconds: Double?
    var audioQuality: String?
    var codec: String?
    var sampleRate: Int?
    var bitDepth: Int?
    var productType = "TRACK"
    var trackGain: Double?
    var trackPeak: Double?
    var albumGain: Double?
    var albumPeak: Double?
    /// `hls` for a presentation (this item's file is then its master playlist); nil: progressive.
    var manifestType: String?
    /// Where the file goes when not `tracks/<id>.<ext>` (an HLS master playlist).
    var localPath: String?

    var relativePath: String { localPath ?? MediaFolder.relativePath(itemId: id, urlPath: urlPath, mimeType: mimeType) }
}

/// An item the origin sent that Cassette will not touch, and why (reported, never written).
struct RefusedItem: Error, Sendable, Encodable {
    var id: String
    var reason: String
}
