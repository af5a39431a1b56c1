import Foundation
import OriginAPI
import Wire

/// The content catalog and its change log. Every publish, change or removal takes the next
/// version; a cursor (`epoch.version`) is the version a client last saw, so `since` answers
/// exactly what moved after it. Removals are remembered for as long as the feed lives; a new
/// feed (a restart, `/_control/reset`) has a new epoch, so an older cursor is refused rather
/// than read against another history.
struct ContentFeed: Sendable {
    var sources: [CatalogSource]
    var categories: [CatalogCategory]
    private(set) var items: [String: CatalogItem] = [:]
    /// Item id → the version of its last publish or change.
    private var changedAt: [String: Int] = [:]
    /// Item id → the version of its removal (gone from `items`).
    private var removedAt: [String: Int] = [:]
    private(set) var version = 0
    let epoch = String(UInt32.random(in: 0x1000_0000...UInt32.max), radix: 16)

    var cursor: String { "\(epoch).\(version)" }

    init(sources: [CatalogSource], categories: [CatalogCategory], items: [CatalogItem]) {
        self.sources = sources
        self.categories = categories
        for item in items { upsert(item) }
    }

    mutating func upsert(_ item: CatalogItem) {
        version += 1
        items[item.id] = item
        changedAt[item.id] = version
        removedAt[item.id] = nil
    }

    /// False when no such item is published.
    mutating func remove(_ id: String) -> Bool {
        guard items.removeValue(forKey: id) != nil else { return false }
        version += 1
        changedAt[id] = nil
        removedAt[id] = version
        return true
    }

    /// Everything current (`since` nil), or what changed after `since`; nil for a cursor this
    /// feed never gave out.
    func changes(since cursor: String?) -> (items: [CatalogItem], removed: [String])? {
        guard let cursor else {
            return (items.values.sorted { changedAt[$0.id]! < changedAt[$1.id]! }, [])
        }
        let parts = cursor.split(separator: ".", maxSplits: 1)
        guard parts.count == 2, parts[0] == epoch, let since = Int(parts[1]), since >= 0, since <= version else { return nil }
        let changed = items.values.filter { changedAt[$0.id]! > since }.sorted { changedAt[$0.id]! < changedAt[$1.id]! }
        let removed = removedAt.filter { $0.value > since }.sorted { $0.value < $1.value }.map(\.key)
        return (changed, removed)
    }

    func hasCategory(_ id: String) -> Bool { categories.contains { $0.id == id } }
    func hasSource(_ id: String) -> Bool { sources.contains { $0.id == id } }
}

extension ContentFeed {
    /// The demo catalog over what the origin serves: three sources, nested categories, every
    /// offline station's tracks and the singles as tracks, and `vid-1` as a video. Priorities
    /// and publication times are fixed so that a test can work out any filter's answer by hand.
    static func demo(_ index: CatalogIndex) -> ContentFeed {
        let sources = [
            CatalogSource(id: "src-music", name: "Cassette Music", description: "Tracks from the demo stations"),
            CatalogSource(id: "src-video", name: "Cassette Video", description: "Short films"),
            CatalogSource(id: "src-news", name: "Cassette News", description: nil),
        ]
        let categories = [
            CatalogCategory(id: "cat-music", name: "Music", parentId: nil),
            CatalogCategory(id: "cat-focus", name: "Focus", parentId: "cat-music"),
            CatalogCategory(id: "cat-workout", name: "Workout", parentId: "cat-music"),
            CatalogCategory(id: "cat-singles", name: "Singles", parentId: "cat-music"),
            CatalogCategory(id: "cat-video", name: "Video", parentId: nil),
            CatalogCategory(id: "cat-trailers", name: "Trailers", parentId: "cat-video"),
            CatalogCategory(id: "cat-news", name: "News", parentId: nil),
        ]
        var items: [CatalogItem] = []
        var serial = 0
        func add(_ productId: String, itemId: String, source: String, categories: [String], priority: Int) {
            guard let product = index.productsById[productId] else { return }
            let size: Int64
            let seconds: Double
            let title: String
            if let hls = product.hls {
                size = Int64(hls.sizeBytes)
                seconds = hls.durationSeconds
                title = product.presentationTitle
            } else if let track = product.trackId.flatMap({ index.tracksById[$0] }), let file = index.file(forTrack: track) {
                size = Int64(file.sizeBytes)
                seconds = track.durationSeconds
                title = track.title
            } else {
                return
            }
            serial += 1
            // One hour apart, newest last: 2026-01-01T01:00:00Z, 02:00, …
            let published = ServerClock.rfc3339(Date(timeIntervalSince1970: 1_767_225_600 + Double(serial) * 3600))
            items.append(
                CatalogItem(
                    id: itemId, productId: productId, type: product.productType, title: title,
                    sourceId: source, categories: categories, sizeBytes: size, durationSeconds: seconds,
                    publishedAt: published, priority: priority, expiresAt: nil))
        }
        // Priorities: distinct, not in publication order.
        let stationPlan: [(String, String, [Int])] = [("st-9", "cat-focus", [50, 80, 20]), ("st-10", "cat-workout", [60, 10, 90])]
        for (stationId, category, priorities) in stationPlan {
            guard let station = index.stationsById[stationId] else { continue }
            for (position, trackId) in station.trackIds.enumerated() {
                let priority = position < priorities.count ? priorities[position] : 5
                add(trackId, itemId: "it-\(trackId)", source: "src-music", categories: [category], priority: priority)
            }
        }
        for (trackId, priority) in [("tr-1", 70), ("tr-2", 40), ("tr-3", 30)] {
            add(trackId, itemId: "it-\(trackId)", source: "src-music", categories: ["cat-singles"], priority: priority)
        }
        add("vid-1", itemId: "it-vid-1", source: "src-video", categories: ["cat-video", "cat-trailers"], priority: 100)
        return ContentFeed(sources: sources, categories: categories, items: items)
    }
}
