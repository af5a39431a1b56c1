import OriginClient
import Wire

/// Checks on everything the origin sends before it can reach the file system or a URL:
/// ids outside `[A-Za-z0-9._-]{1,128}`, URLs to other hosts or schemes,
/// sizes that are not positive numbers, checksums that are not 64 hex digits. A refused item
/// is reported with its reason; nothing is written for it.
enum HostileInput {
    /// Largest single file accepted (a typo or a hostile size must not reserve the disk).
    static let maxFileBytes: Int64 = 64 << 30

    /// Parses one item. `fileFields` holds `url`/`sizeBytes`/`sha256`/`mimeType` (a station
    /// item itself, or a playbackinfo `manifest`); `meta` the descriptive fields.
    static func item(id rawId: JSONValue?, fileFields: JSONValue?, meta: JSONValue?, origin: OriginClient) -> Result<ManifestItem, RefusedItem> {
        guard let id = rawId?.stringValue else {
            return .failure(RefusedItem(id: "\(rawId.map { String(decoding: $0.serialized(), as: UTF8.self) } ?? "null")", reason: "the item has no string id"))
        }
        guard OriginID.isValid(id) else {
            return .failure(RefusedItem(id: String(id.prefix(140)), reason: "the id is not a plain token ([A-Za-z0-9._-]{1,128})"))
        }
        guard let file = fileFields?.objectValue else { return .failure(RefusedItem(id: id, reason: "no file description")) }
        guard let rawURL = file["url"]?.stringValue else { return .failure(RefusedItem(id: id, reason: "no url")) }
        let url: String
        do {
            url = try origin.relativeURL(rawURL)
        } catch {
            return .failure(RefusedItem(id: id, reason: "\(error)"))
        }
        guard let size = file["sizeBytes"]?.doubleValue, size.rounded() == size, size > 0, size <= Double(maxFileBytes) else {
            return .failure(RefusedItem(id: id, reason: "sizeBytes must be a whole number between 1 and \(maxFileBytes)"))
        }
        guard let sha = file["sha256"]?.stringValue?.lowercased(), sha.utf8.count == 64,
            sha.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
        else {
            return .failure(RefusedItem(id: id, reason: "sha256 must be 64 hex digits"))
        }
        var item = ManifestItem(
            id: id, url: url, urlPath: urlPath(of: url), sizeBytes: Int64(size), sha256: sha,
            mimeType: file["mimeType"]?.stringValue)
        let meta = meta ?? .object([:])
        item.title = meta["title"]?.stringValue
        item.artist = meta["artist"]?.stringValue
        item.album = meta["album"]?.stringValue
        item.durationSeconds = meta["durationSeconds"]?.doubleValue
        item.audioQuality = meta["audioQuality"]?.stringValue
        item.codec = meta["codec"]?.stringValue
        item.sampleRate = meta["sampleRate"]?.intValue
        item.bitDepth = meta["bitDepth"]?.intValue
        item.productType = meta["productType"]?.stringValue ?? "TRACK"
        if let gain = meta["replayGain"]?.objectValue {
            item.trackGain = gain["trackGain"]?.doubleValue
            item.trackPeak = gain["trackPeak"]?.doubleValue
            item.albumGain = gain["albumGain"]?.doubleValue
            item.albumPeak = gain["albumPeak"]?.doubleValue
        }
        return .success(item)
    }

    /// The path of a URL (absolute, or relative to the origin), without query or fragment.
    static func urlPath(of url: String) -> String {
        var path = Substring(url)
        if let schemeEnd = url.range(of: "://") {
            let rest = url[schemeEnd.upperBound...]
            guard let slash = rest.firstIndex(of: "/") else { return "/" }
            path = rest[slash...]
        }
        let end = path.firstIndex(where: { $0 == "?" || $0 == "#" }) ?? path.endIndex
        return String(path[..<end])
    }
}
