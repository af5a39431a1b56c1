import Crypto
import Foundation
import HLS
import HTTPClient
import OriginClient
import Wire

/// One file a product needs besides (or, for HLS, including) its main file: a playlist, a
/// segment, an init section or an image, with what the engine checks it against.
struct PlannedFile: Sendable, Equatable, Codable {
    enum Role: String, Sendable, Codable { case master, playlist, segment, initSection = "init", image }

    /// Its name inside the product (`v0/seg000.ts`, `images/poster.png`): the local media
    /// server's path under `/p/{productId}/`.
    var name: String
    var role: Role
    /// The URL relative to the origin (`/path?query`, as `files.url` keeps it, so a new
    /// origin address still reaches it); `urlPath` is the cache key.
    var url: String
    var urlPath: String
    /// Known for what was read while planning (the master and media playlists); nil for
    /// segments, init sections and images, whose size the `GET` that downloads them tells (the
    /// origin is never asked for a size alone: an edge may refuse any method but `GET`).
    var sizeBytes: Int64?
    /// A file of unknown size: what the planner expects it to hold (`estimatedBytes`), for
    /// `offline.estimate` and the storage admission until its `GET` answers.
    var estimatedBytes: Int64?
    /// Playlists: the SHA-256 of the bytes parsed when the product was added, so the engine's
    /// copy is the one that was planned. Segments and images: nil (the origin gives none), the
    /// length the `GET` announced is checked.
    var sha256: String?
    var mimeType: String?
    /// Relative to the media directory.
    var localPath: String
    /// Segments: where the earliest playlist that plays it starts it, in seconds (partial
    /// prepositioning keeps the segments that start before its limit).
    var startSeconds: Double?

    /// Whether a download limited to the first `seconds` of the presentation needs this file:
    /// every file but the segments that start at or after the limit (nil: no limit).
    func isWanted(within seconds: Double?) -> Bool {
        guard let seconds, role == .segment, let start = startSeconds else { return true }
        return start < seconds
    }

    /// What a file of unknown size counts for when its product kept no estimate, and what a
    /// poster is expected to hold; a thumbnail is expected to hold `guessedThumbnailBytes`.
    static let guessedBytes: Int64 = 32 << 10
    static let guessedThumbnailBytes: Int64 = 4 << 10
}

/// An HLS product's download, as `offline.add` stores it: the master playlist (the product's
/// main file), every other file listed once, and the content keys the segments need.
struct HLSPlan: Sendable {
    var master: PlannedFile
    var files: [PlannedFile]
    var keyIds: [String]
    var choice: HLSChoice
}

/// Reads an HLS presentation from the origin and lists what offlining it takes: the chosen
/// variant's and renditions' media playlists, each segment and init section once (a resource
/// read in byte ranges is one file), and the key ids of every `EXT-X-KEY` (`/v1/keys/{keyId}`).
///
/// Only playlists are fetched (`GET`). Segments, init sections and images are not asked for
/// their size (signed URLs are often valid for `GET` only, and an edge may refuse any other
/// method); each is listed with an estimate instead, and its `GET` tells its size when it is
/// downloaded. A segment of the variant's playlist is expected to hold `AVERAGE-BANDWIDTH` (or
/// `BANDWIDTH`) × its `EXTINF` duration, a resource read in byte ranges at least its largest
/// range's end; a rendition's segments count for nothing of their own, since the variant's
/// `BANDWIDTH` covers its renditions (RFC 8216 §4.3.4.2); a poster `PlannedFile.guessedBytes`,
/// a thumbnail `guessedThumbnailBytes`.
struct HLSPlanner: Sendable {
    let origin: OriginClient

    /// The master playlist a playbackinfo names, fetched and parsed.
    func master(productId: String, info: JSONValue, retry: RetryPolicy) async throws -> (url: String, bytes: [UInt8], playlist: HLSMasterPlaylist) {
        guard let raw = info["manifest"]?["url"]?.stringValue else { throw DownloaderError.hostileManifest("the HLS manifest has no url") }
        let url = try resolve(raw)
        let bytes = try await fetch(url, retry: retry)
        if let declared = info["manifest"]?["sha256"]?.stringValue?.lowercased(), declared != Self.sha256(bytes) {
            throw DownloaderError.hostileManifest("the master playlist of \(productId) does not have the SHA-256 its playbackinfo declares")
        }
        switch try parse(bytes, what: "master playlist") {
        case .master(let master): return (url, bytes, master)
        case .media: throw DownloaderError.hostileManifest("\(productId)'s manifest is a media playlist, not a master playlist")
        }
    }

    func plan(
        productId: String, info: JSONValue, bitrate: Int?, audioLanguages: [String]?, subtitleLanguages: [String]?,
        retry: RetryPolicy
    ) async throws -> HLSPlan {
        let (masterURL, masterBytes, master) = try await self.master(productId: productId, info: info, retry: retry)
        let choice = try HLSChoice.choose(master, bitrate: bitrate, audioLanguages: audioLanguages, subtitleLanguages: subtitleLanguages)
        let folder = Self.directory(of: HLSURL.path(of: masterURL))
        var names = Naming(productId: productId, folder: folder)
        let masterFile = PlannedFile(
            name: "master.m3u8", role: .master, url: try stored(masterURL), urlPath: HLSURL.path(of: masterURL),
            sizeBytes: Int64(masterBytes.count), sha256: Self.sha256(masterBytes),
            mimeType: Self.mimeType("m3u8"), localPath: "hls/\(productId)/master.m3u8")
        names.reserve(masterFile.urlPath, as: "master.m3u8")
        var files: [PlannedFile] = []
        var resources: [(url: String, rangeEnd: Int64?, role: PlannedFile.Role)] = []
        var keyIds: [String] = []
        var starts: [String: Double] = [:]
        // Seconds of the variant's own playlist each resource plays (its bytes are estimated from them).
        var variantSeconds: [String: Double] = [:]
        let playlists = try await mediaPlaylists(choice: choice, masterURL: masterURL, retry: retry)
        for (index, playlist) in playlists.enumerated() {
            let (uri, checked, urlPath, bytes) = (playlist.uri, playlist.url, playlist.urlPath, playlist.bytes)
            guard case .media(let media) = try parse(bytes, what: uri) else {
                throw DownloaderError.hostileManifest("\(uri) is a master playlist where a media playlist belongs")
            }
            guard media.hasEndList, !media.segments.isEmpty else {
                throw DownloaderError.hostileManifest("\(uri) is not a complete presentation (no segments, or no #EXT-X-ENDLIST)")
            }
            let name = try names.name(for: urlPath)
            files.append(
                PlannedFile(
                    name: name, role: .playlist, url: try stored(checked), urlPath: urlPath, sizeBytes: Int64(bytes.count),
                    sha256: Self.sha256(bytes), mimeType: Self.mimeType("m3u8"), localPath: names.localPath(name)))
            for key in media.keyURIs {
                guard let keyURL = HLSURL.resolve(key, against: checked) else { throw DownloaderError.hostileManifest("cannot resolve key \(key)") }
                let keyId = try Self.keyId(HLSURL.path(of: try resolve(keyURL)))
                if !keyIds.contains(keyId) { keyIds.append(keyId) }
            }
            var start = 0.0
            for segment in media.segments {
                if let url = HLSURL.resolve(segment.uri, against: checked) {
                    let path = HLSURL.path(of: url)
                    starts[path] = min(starts[path] ?? start, start)
                    if index == 0 { variantSeconds[path, default: 0] += max(0, segment.duration) }
                }
                start += segment.duration
            }
            for resource in media.resources {
                guard let url = HLSURL.resolve(resource.uri, against: checked) else {
                    throw DownloaderError.hostileManifest("cannot resolve \(resource.uri)")
                }
                let isInit = media.segments.contains { $0.map?.uri == resource.uri } && !media.segments.contains { $0.uri == resource.uri }
                resources.append((try resolve(url), resource.rangeEnd, isInit ? .initSection : .segment))
            }
        }
        // Each resource once, however many playlists or byte ranges read it.
        var seen = Set(files.map(\.urlPath) + [masterFile.urlPath])
        var unique: [(url: String, urlPath: String, rangeEnd: Int64?, role: PlannedFile.Role)] = []
        for resource in resources {
            let urlPath = HLSURL.path(of: resource.url)
            if let index = unique.firstIndex(where: { $0.urlPath == urlPath }) {
                if let end = resource.rangeEnd, let old = unique[index].rangeEnd {
                    unique[index].rangeEnd = max(end, old)
                } else {
                    unique[index].rangeEnd = nil
                }
                continue
            }
            guard seen.insert(urlPath).inserted else { continue }
            unique.append((resource.url, urlPath, resource.rangeEnd, resource.role))
        }
        let bytesPerSecond = Double(choice.variant.averageBandwidth ?? choice.variant.bandwidth) / 8
        for resource in unique {
            if let end = resource.rangeEnd, end > HostileInput.maxFileBytes {
                throw DownloaderError.hostileManifest("a byte range of \(resource.urlPath) ends past \(HostileInput.maxFileBytes) bytes")
            }
            let name = try names.name(for: resource.urlPath)
            let timed = Int64((bytesPerSecond * (variantSeconds[resource.urlPath] ?? 0)).rounded())
            files.append(
                PlannedFile(
                    name: name, role: resource.role, url: try stored(resource.url), urlPath: resource.urlPath, sizeBytes: nil,
                    estimatedBytes: max(resource.rangeEnd ?? 0, timed),
                    sha256: nil, mimeType: Self.mimeType(Self.fileExtension(resource.urlPath)),
                    localPath: names.localPath(name),
                    startSeconds: resource.role == .segment ? starts[resource.urlPath] : nil))
        }
        return HLSPlan(master: masterFile, files: files, keyIds: keyIds, choice: choice)
    }

    /// The media playlists of the chosen variant and renditions, each once (the first URI that
    /// names it keeps its place; the variant's comes first), in that order. They are fetched
    /// together: each child task returns its playlist's position with its bytes and the list is
    /// assembled here, so the order never depends on which answer arrives first.
    private func mediaPlaylists(
        choice: HLSChoice, masterURL: String, retry: RetryPolicy
    ) async throws -> [(uri: String, url: String, urlPath: String, bytes: [UInt8])] {
        var wanted: [(uri: String, url: String, urlPath: String)] = []
        for uri in [choice.variant.uri] + (choice.audio + choice.subtitles).compactMap(\.uri) {
            guard let url = HLSURL.resolve(uri, against: masterURL) else { throw DownloaderError.hostileManifest("cannot resolve \(uri)") }
            let checked = try resolve(url)
            let urlPath = HLSURL.path(of: checked)
            guard !wanted.contains(where: { $0.urlPath == urlPath }) else { continue }
            wanted.append((uri, checked, urlPath))
        }
        let urls = wanted.map(\.url)
        let fetched = try await withThrowingTaskGroup(of: (Int, [UInt8]).self) { group in
            for (index, url) in urls.enumerated() {
                group.addTask { (index, try await fetch(url, retry: retry)) }
            }
            var bytes = [[UInt8]?](repeating: nil, count: urls.count)
            for try await (index, body) in group { bytes[index] = body }
            return bytes
        }
        return zip(wanted, fetched).map { playlist, bytes in (playlist.uri, playlist.url, playlist.urlPath, bytes ?? []) }
    }

    /// The product's poster and thumbnail (`images` of its playbackinfo), listed without asking
    /// the origin anything: their `GET` tells their size.
    func images(productId: String, info: JSONValue) throws -> [PlannedFile] {
        var wanted: [(kind: String, url: String)] = []
        for kind in ["poster", "thumbnail"] {
            guard let raw = info["images"]?[kind]?.stringValue else { continue }
            wanted.append((kind, try resolve(raw)))
        }
        return try wanted.map { image in
            let urlPath = HLSURL.path(of: image.url)
            let ext = MediaFolder.fileExtension(urlPath: urlPath, mimeType: nil)
            return PlannedFile(
                name: "images/\(image.kind).\(ext)", role: .image, url: try stored(image.url), urlPath: urlPath, sizeBytes: nil,
                estimatedBytes: image.kind == "thumbnail" ? PlannedFile.guessedThumbnailBytes : PlannedFile.guessedBytes,
                sha256: nil, mimeType: Self.mimeType(ext),
                localPath: "images/\(productId)/\(image.kind).\(ext)")
        }
    }

    /// The product's media item, whose file is the master playlist as the origin served it.
    func masterItem(_ master: PlannedFile, productId: String, info: JSONValue) throws -> ManifestItem {
        let fields: JSONValue = [
            "url": .string(master.url), "sizeBytes": .number(Double(master.sizeBytes ?? 0)),
            "sha256": .string(master.sha256 ?? ""), "mimeType": master.mimeType.map(JSONValue.string) ?? .null,
        ]
        switch HostileInput.item(id: .string(productId), fileFields: fields, meta: info, origin: origin) {
        case .success(var item):
            item.manifestType = "hls"
            item.localPath = master.localPath
            return item
        case .failure(let refusal):
            throw DownloaderError.hostileManifest(refusal.reason)
        }
    }

    // MARK: Helpers

    /// `files.url` of an absolute URL on the origin.
    private func stored(_ url: String) throws -> String {
        do { return try origin.relativeURL(url) } catch { throw DownloaderError.hostileManifest("\(error)") }
    }

    private func resolve(_ url: String) throws -> String {
        do { return try origin.resolveURL(url) } catch { throw DownloaderError.hostileManifest("\(error)") }
    }

    private func parse(_ bytes: [UInt8], what: String) throws -> HLSPlaylist {
        do { return try HLSParser.parse(bytes) } catch let error as HLSError {
            throw DownloaderError.hostileManifest("\(what): \(error)")
        }
    }

    private func fetch(_ url: String, retry: RetryPolicy) async throws -> [UInt8] {
        let response = try await origin.send(HTTPRequest(method: "GET", url: url), retry: retry)
        guard (200..<300).contains(response.status) else { throw OriginError(status: response.status, body: response.body) }
        guard response.body.count <= HLSLimits.maxPlaylistBytes else {
            throw DownloaderError.hostileManifest("\(HLSURL.path(of: url)) is larger than a playlist may be")
        }
        return response.body
    }

    /// `/v1/keys/{keyId}` → keyId (docs/origin.md: keys are fetched under the license, by id).
    static func keyId(_ urlPath: String) throws -> String {
        let prefix = "/v1/keys/"
        guard urlPath.hasPrefix(prefix), OriginID.isValid(String(urlPath.dropFirst(prefix.count))) else {
            throw DownloaderError.hostileManifest("the key URI \(urlPath.prefix(140).debugDescription) is not /v1/keys/{keyId}")
        }
        return String(urlPath.dropFirst(prefix.count))
    }

    static func sha256(_ bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    static func directory(of urlPath: String) -> String {
        guard let slash = urlPath.lastIndex(of: "/") else { return "/" }
        return String(urlPath[...slash])
    }

    static func fileExtension(_ urlPath: String) -> String {
        let last = urlPath.split(separator: "/").last ?? ""
        guard let dot = last.lastIndex(of: ".") else { return "" }
        return last[last.index(after: dot)...].lowercased()
    }

    static func mimeType(_ ext: String) -> String? {
        switch ext {
        case "m3u8": "application/vnd.apple.mpegurl"
        case "ts": "video/mp2t"
        case "m4s", "mp4", "m4v": "video/mp4"
        case "m4a": "audio/mp4"
        case "aac": "audio/aac"
        case "vtt", "webvtt": "text/vtt"
        case "png": "image/png"
        case "jpg", "jpeg": "image/jpeg"
        default: nil
        }
    }

    /// Names inside the product folder: the URL path below the master playlist's folder when
    /// every component is a plain token, otherwise `x/<n>.<ext>` (a resource elsewhere on the
    /// origin, or with odd bytes in its name). `images/` and `keys/` are the server's own.
    struct Naming {
        let productId: String
        let folder: String
        private var byPath: [String: String] = [:]
        private var taken = Set<String>()

        init(productId: String, folder: String) {
            self.productId = productId
            self.folder = folder
        }

        mutating func reserve(_ urlPath: String, as name: String) {
            byPath[urlPath] = name
            taken.insert(name)
        }

        mutating func name(for urlPath: String) throws -> String {
            if let known = byPath[urlPath] { return known }
            var name: String?
            if urlPath.hasPrefix(folder) {
                let relative = String(urlPath.dropFirst(folder.count))
                let parts = relative.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
                if !parts.isEmpty, parts.count <= 8, parts.allSatisfy(OriginID.isValid), !["images", "keys", "x"].contains(parts[0]) {
                    name = relative
                }
            }
            if name == nil || taken.contains(name!) {
                let ext = HLSPlanner.fileExtension(urlPath)
                let plain = (1...5).contains(ext.count) && OriginID.isValid(ext) ? "." + ext : ""
                name = "x/\(taken.count)\(plain)"
            }
            reserve(urlPath, as: name!)
            return name!
        }

        func localPath(_ name: String) -> String { "hls/\(productId)/\(name)" }
    }
}
