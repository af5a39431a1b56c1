import Foundation

/// The demo catalog as written to `DIR/catalog.json` by `generate` and read by `serve`.
///
/// It is the origin's own schema, not part of the wire contract: the server turns it into
/// the shapes of docs/origin.md. Everything a response needs (sizes, hashes, ReplayGain) is
/// measured once at generation time so serving never re-reads media to answer JSON.
struct StateDB: Codable, Sendable {
    static let schemaVersion = 2
    static let fileName = "catalog.json"

    var schemaVersion: Int
    /// Written last by the generator; a catalog without it is half-built and is regenerated.
    var complete: Bool
    var generatedAt: String
    var parameters: GenerationParameters
    /// Every servable file, keyed by its path below DIR (`media/…`, `img/…`).
    var files: [CatalogFile]
    var tracks: [CatalogTrack]
    var stations: [CatalogStation]
    var products: [CatalogProduct]
}

struct GenerationParameters: Codable, Sendable, Equatable {
    var tracksPerStation: Int
    var seconds: Double
    /// When set and not empty, the catalog holds only these synthetic stations (`SyntheticCatalog`).
    var synthetic: [SyntheticStationSpec]? = nil
    /// Length of `vid-1`; nil: `seconds` within 4…8.
    var videoSeconds: Double? = nil
}

struct CatalogFile: Codable, Sendable {
    /// Relative to DIR, with forward slashes, e.g. `media/tr-9-01.flac`; served at `/` + path.
    var path: String
    var sizeBytes: Int
    var sha256: String
    var mimeType: String
}

struct ReplayGain: Codable, Sendable {
    var trackGain: Double
    var trackPeak: Double
    var albumGain: Double
    var albumPeak: Double
}

struct CatalogTrack: Codable, Sendable {
    var id: String
    var title: String
    var artist: String
    var album: String
    var durationSeconds: Double
    /// Path of the media file below DIR.
    var file: String
    var codec: String
    var mimeType: String
    var audioQuality: String
    var sampleRate: Int
    var bitDepth: Int?
    var replayGain: ReplayGain
}

/// What a station does when its offline window lapses without an extension (docs/origin.md).
enum ExpiryPolicy: String, Codable, Sendable {
    case delete
    case keep
}

struct CatalogStation: Codable, Sendable {
    var id: String
    var name: String
    /// Streaming-only stations (`false`) are listed but refuse offline sync with 403/4007.
    var offline: Bool
    var onExpiry: ExpiryPolicy
    var validitySeconds: Int
    var revalidateSeconds: Int
    var trackIds: [String]
}

/// How a refused product answers: e.g. 403/4032 for a geo-blocked one.
struct CatalogRefusal: Codable, Sendable {
    var status: Int
    var subStatus: Int
    var userMessage: String
}

/// An HLS rendition set produced for a video product.
struct CatalogHLS: Codable, Sendable {
    /// Path of the master playlist below DIR.
    var master: String
    /// Key ids used by `#EXT-X-KEY` URIs (`/v1/keys/{keyId}`); keys derive from the id.
    var keyIds: [String]
    var durationSeconds: Double
    var sizeBytes: Int
    /// What playbackinfo reports for it: the video codec of a video, the audio codec of a track.
    var codec: String
    var audioQuality: String
    var sampleRate: Int = 44_100
    var bitDepth: Int?
}

struct CatalogProduct: Codable, Sendable {
    var id: String
    /// `TRACK` or `VIDEO`.
    var productType: String
    /// The track actually delivered; differs from `id` for a replacement (tr-7 → tr-7b).
    var trackId: String?
    var hls: CatalogHLS?
    var canBeDownloaded: Bool
    var refusal: CatalogRefusal?
    var offlineValiditySeconds: Int
    var revalidateSeconds: Int
    /// Needed in `POST /v1/licenses` for encrypted products; `nil` when no license is needed.
    var licenseSecurityToken: String?
    /// Paths below DIR for `images.poster` / `images.thumbnail`.
    var poster: String?
    var thumbnail: String?

    /// The title of a presentation (HLS): its playbackinfo's and its content-catalog item's.
    /// A progressive product's title is its track's.
    var presentationTitle: String { productType == "VIDEO" ? "Demo Film" : "Demo HLS Track \(id)" }
}

extension StateDB {
    /// Loads `DIR/catalog.json`; `nil` when it is missing, unreadable, from another schema,
    /// incomplete, or names a media file that is gone or has another size.
    static func loadComplete(from directory: URL) -> StateDB? {
        let url = directory.appendingPathComponent(fileName)
        guard let data = try? Data(contentsOf: url),
            let catalog = try? JSONDecoder().decode(StateDB.self, from: data),
            catalog.schemaVersion == schemaVersion, catalog.complete
        else { return nil }
        for file in catalog.files {
            let path = directory.appendingPathComponent(file.path).path
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
                let size = attributes[.size] as? NSNumber, size.intValue == file.sizeBytes
            else { return nil }
        }
        return catalog
    }

    /// Writes through a temporary file and a rename, so a reader never sees half a catalog.
    func write(to directory: URL) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(self)
        let final = directory.appendingPathComponent(StateDB.fileName)
        let temporary = directory.appendingPathComponent(StateDB.fileName + ".tmp")
        try data.write(to: temporary)
        if rename(temporary.path, final.path) != 0 {
            throw OriginError(description: "cannot rename \(temporary.path): errno \(errno)")
        }
    }
}

/// An index over a loaded catalog for the lookups requests make.
struct CatalogIndex: Sendable {
    let catalog: StateDB
    let filesByPath: [String: CatalogFile]
    let tracksById: [String: CatalogTrack]
    let stationsById: [String: CatalogStation]
    let productsById: [String: CatalogProduct]

    init(_ catalog: StateDB) {
        self.catalog = catalog
        filesByPath = Dictionary(catalog.files.map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
        tracksById = Dictionary(catalog.tracks.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        stationsById = Dictionary(catalog.stations.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        productsById = Dictionary(catalog.products.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    }

    func file(forTrack track: CatalogTrack) -> CatalogFile? {
        filesByPath[track.file]
    }
}

struct OriginError: Error, CustomStringConvertible {
    let description: String
}
