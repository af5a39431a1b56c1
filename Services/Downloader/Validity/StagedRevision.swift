import Foundation

/// A re-offline waiting for its new file (TIDAL re-validation, changed `manifestHash`), kept as
/// JSON in `offlineProducts.staged` so it survives a kill: what the product becomes once the
/// file is verified.
struct StagedRevision: Sendable, Codable, Equatable {
    var manifestHash: String
    /// The new file's `files.id`, queued for the token beside the old one.
    var fileId: Int64
    /// The new media item (its id is the new actual product id).
    var item: ManifestItem
    var validity: Validity
    /// A license requested for the new content, kept aside until the swap.
    var licenseId: String?
    /// An HLS presentation's other files (playlists, segments, init sections, images), queued
    /// beside the held ones; nil for a progressive product.
    var files: [StagedFile]?

    /// Every file the swap waits for.
    var fileIds: [Int64] { [fileId] + (files ?? []).map(\.fileId) }

    /// Where a staged file goes: `localPath` with its top folder renamed `{folder}-{mark}`
    /// (`hls/vid-1/v0/seg000.ts` → `hls-3f2a…/vid-1/v0/seg000.ts`), so the new presentation never
    /// overwrites the one still playing; `urlPath` is marked `#mark` until the swap (the
    /// catalog's cache key is unique, and the held file keeps the plain one).
    static func staged(localPath: String, mark: String) -> String {
        var parts = localPath.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        parts[0] += "-" + mark
        return parts.joined(separator: "/")
    }

    func encoded() throws -> String {
        String(decoding: try JSONEncoder().encode(self), as: UTF8.self)
    }

    /// nil for a value this version cannot read (treated as no staging: the next round re-stages).
    static func decode(_ text: String) -> StagedRevision? {
        try? JSONDecoder().decode(StagedRevision.self, from: Data(text.utf8))
    }
}

/// One file of a staged HLS presentation: its `productFiles` row to be.
struct StagedFile: Sendable, Codable, Equatable {
    var name: String
    var role: PlannedFile.Role
    var fileId: Int64
}
