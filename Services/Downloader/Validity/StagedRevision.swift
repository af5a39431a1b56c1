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

    func encoded() throws -> String {
        String(decoding: try JSONEncoder().encode(self), as: UTF8.self)
    }

    /// nil for a value this version cannot read (treated as no staging: the next round re-stages).
    static func decode(_ text: String) -> StagedRevision? {
        try? JSONDecoder().decode(StagedRevision.self, from: Data(text.utf8))
    }
}
