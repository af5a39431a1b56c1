import StateDB
import Synchronization

/// What the local media server keeps between requests: a product as the catalog lists it (every
/// file) and its playlists as rewritten, as long as the catalog has not changed since they were
/// read (`StateDBChanges`): a commit of any process (a product deleted or renewed, a segment
/// verified, renditions added, the trusted time moved) drops all of it. A playlist is read from
/// disk and rewritten once per catalog change, not at every request.
///
/// Nothing kept is an answer on its own: whether the product may be served is judged again at
/// every request, from its validity and trusted-time anchor as kept, at the trusted time then
/// (`ServedProduct.judgedNow`), so a kept playlist never outlives a license's end.
final class MediaServerCache: Sendable {
    private struct Entry {
        var product: MediaServerStore.ServedProduct
        /// Rewritten playlists by name under `/p/{productId}/`.
        var playlists: [String: [UInt8]] = [:]
    }

    private struct State {
        /// The catalog's change count everything below was read at.
        var version: Int?
        /// By the product id of the request (requested or actual).
        var entries: [String: Entry] = [:]

        /// Everything kept for another catalog version is dropped.
        mutating func moveTo(_ version: Int) {
            guard self.version != version else { return }
            self.version = version
            entries.removeAll()
        }
    }

    /// Products kept at once; one more drops them all (a player serves one or two at a time).
    static let maxProducts = 8

    private let state = Mutex(State())
    private let changes: StateDBChanges

    init(changes: StateDBChanges) {
        self.changes = changes
    }

    /// The catalog's change count now: ask it before reading the catalog, keep what was read with it.
    func version() -> Int { changes.count() }

    /// `productId` as kept at catalog `version`; nil when nothing is kept for it at that version.
    func product(_ productId: String, version: Int) -> MediaServerStore.ServedProduct? {
        state.withLock { $0.version == version ? $0.entries[productId]?.product : nil }
    }

    /// The playlist `name` of `productId` as rewritten at catalog `version`.
    func playlist(_ name: String, of productId: String, version: Int) -> [UInt8]? {
        state.withLock { $0.version == version ? $0.entries[productId]?.playlists[name] : nil }
    }

    /// Keeps `product` (read with every file at catalog `version`) for requests of `productId`.
    func keep(_ product: MediaServerStore.ServedProduct, for productId: String, version: Int) {
        state.withLock { state in
            state.moveTo(version)
            if state.entries[productId] == nil, state.entries.count >= Self.maxProducts { state.entries.removeAll() }
            state.entries[productId] = Entry(product: product)
        }
    }

    /// Keeps a playlist rewritten from the product kept at catalog `version`.
    func keep(playlist: [UInt8], named name: String, of productId: String, version: Int) {
        state.withLock { state in
            guard state.version == version else { return }
            state.entries[productId]?.playlists[name] = playlist
        }
    }
}
