import OriginAPI
import OriginClient
import Wire

/// `/v1/catalog/items`: what changed since the cursor sent (everything when none was).
struct CatalogChanges: Sendable {
    var cursor: String
    var items: [CatalogItem]
    var removed: [String]
    /// Entries the downloader refused (an id that is not a plain token, a missing field), by reason.
    var refused: [String]
}

/// Reads the origin's catalog answers. Ids must be plain tokens (they reach the catalog and,
/// for products, URLs); an entry that breaks a rule is skipped and named, never stored.
enum CatalogFeed {
    static func sources(_ answer: JSONValue) throws -> [CatalogSource] {
        guard let list = answer["sources"]?.arrayValue else { throw DownloaderError.hostileManifest("catalog sources: no sources list") }
        return list.compactMap { entry in
            guard let id = entry["id"]?.stringValue, OriginID.isValid(id), let name = entry["name"]?.stringValue else { return nil }
            return CatalogSource(id: id, name: String(name.prefix(512)), description: entry["description"]?.stringValue.map { String($0.prefix(4096)) })
        }
    }

    static func categories(_ answer: JSONValue) throws -> [CatalogCategory] {
        guard let list = answer["categories"]?.arrayValue else { throw DownloaderError.hostileManifest("catalog categories: no categories list") }
        return list.compactMap { entry in
            guard let id = entry["id"]?.stringValue, OriginID.isValid(id), let name = entry["name"]?.stringValue else { return nil }
            let parent = entry["parentId"]?.stringValue
            if let parent, !OriginID.isValid(parent) { return nil }
            return CatalogCategory(id: id, name: String(name.prefix(512)), parentId: parent)
        }
    }

    static func changes(_ answer: JSONValue) throws -> CatalogChanges {
        guard let cursor = answer["cursor"]?.stringValue, !cursor.isEmpty, cursor.utf8.count <= 256,
            let list = answer["items"]?.arrayValue
        else { throw DownloaderError.hostileManifest("catalog items: no cursor or no items list") }
        var items: [CatalogItem] = []
        var refused: [String] = []
        for entry in list {
            switch item(entry) {
            case .success(let item): items.append(item)
            case .failure(let reason): refused.append(reason.text)
            }
        }
        let removed = (answer["removed"]?.arrayValue ?? []).compactMap(\.stringValue).filter(OriginID.isValid)
        return CatalogChanges(cursor: cursor, items: items, removed: removed, refused: refused)
    }

    struct Refusal: Error { var text: String }

    static func item(_ entry: JSONValue) -> Result<CatalogItem, Refusal> {
        guard let id = entry["id"]?.stringValue, OriginID.isValid(id) else {
            return .failure(Refusal(text: "an item id that is not a plain token"))
        }
        guard let productId = entry["productId"]?.stringValue, OriginID.isValid(productId) else {
            return .failure(Refusal(text: "\(id): productId is not a plain token"))
        }
        guard let type = entry["type"]?.stringValue, ["VIDEO", "TRACK"].contains(type) else {
            return .failure(Refusal(text: "\(id): type must be VIDEO or TRACK"))
        }
        guard let sourceId = entry["sourceId"]?.stringValue, OriginID.isValid(sourceId) else {
            return .failure(Refusal(text: "\(id): sourceId is not a plain token"))
        }
        let categories = (entry["categories"]?.arrayValue ?? []).compactMap(\.stringValue)
        guard categories.allSatisfy(OriginID.isValid), categories.count <= 64 else {
            return .failure(Refusal(text: "\(id): categories must be plain tokens"))
        }
        guard let size = entry["sizeBytes"]?.doubleValue, size >= 0, size < 1e15, size.rounded() == size else {
            return .failure(Refusal(text: "\(id): sizeBytes must be a whole number of bytes"))
        }
        let priority = entry["priority"]?.doubleValue ?? 0
        guard (0...100).contains(priority) else { return .failure(Refusal(text: "\(id): priority must be 0…100")) }
        guard let published = entry["publishedAt"]?.stringValue, published.utf8.count <= 64 else {
            return .failure(Refusal(text: "\(id): publishedAt is missing"))
        }
        return .success(
            CatalogItem(
                id: id, productId: productId, type: type, title: String((entry["title"]?.stringValue ?? id).prefix(512)),
                sourceId: sourceId, categories: categories, sizeBytes: Int64(size),
                durationSeconds: entry["durationSeconds"]?.doubleValue, publishedAt: published, priority: Int(priority),
                expiresAt: entry["expiresAt"]?.stringValue))
    }
}
