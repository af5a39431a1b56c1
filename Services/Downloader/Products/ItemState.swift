/// The VOC item states, spelled as the catalog stores them (lowercase first, docs/catalog.md)
/// and as `offline.status` reports them.
enum ItemState: String, Sendable, Codable, CaseIterable {
    case discovered, queued, downloading, idle, paused, cached, partiallyCached, failed, deleted

    /// States in which the engine should be fetching the item's file.
    var wantsBytes: Bool { self == .queued || self == .downloading || self == .idle }
}
