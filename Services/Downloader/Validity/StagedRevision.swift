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
    /// The product's other files (`productFiles` to be: an HLS presentation's playlists,
    /// segments and init sections, and any product's images), queued beside the held ones.
    /// Empty for a product with none; nil only in a revision an earlier version staged for a
    /// progressive product, whose swap moves the main file and leaves the held
    /// `productFiles` as they are.
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

extension PlannedFile {
    /// This file given its staged place for a re-offline marked `mark`: its local path under
    /// `StagedRevision.staged(localPath:mark:)` and its URL path marked `#mark` until the swap.
    func staged(mark: String) -> PlannedFile {
        var file = self
        file.localPath = StagedRevision.staged(localPath: localPath, mark: mark)
        file.urlPath += "#" + mark
        return file
    }
}

/// One file of a staged revision besides its main file: its `productFiles` row to be.
struct StagedFile: Sendable, Codable, Equatable {
    var name: String
    var role: PlannedFile.Role
    var fileId: Int64
}
