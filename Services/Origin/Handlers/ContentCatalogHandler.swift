import NIOHTTP1
import OriginAPI
import Synchronization
import Wire

extension Origin {
    /// `GET /v1/catalog/sources|categories|items` (docs/origin.md, "Content catalog").
    func contentCatalog(_ request: OriginRequest, resource: String) -> OriginResponse {
        guard request.method == .GET else { return methodNotAllowed(request, "GET") }
        let feed = contentFeed.withLock { $0 }
        switch resource {
        case "sources":
            return ok(["sources": .array(feed.sources.map(\.json))])
        case "categories":
            return ok(["categories": .array(feed.categories.map(\.json))])
        case "items":
            let since = request.query["since"]
            guard let changes = feed.changes(since: since) else {
                return badRequest(
                    "since \(String((since ?? "").prefix(64)).debugDescription) is not a cursor this origin gave out; ask without since.", request)
            }
            stats.countCatalogItems(changes.items.count + changes.removed.count)
            return ok([
                "cursor": .string(feed.cursor), "items": .array(changes.items.map(\.json)),
                "removed": .array(changes.removed.map(JSONValue.string)),
            ])
        default:
            return notFound("Resource", request)
        }
    }

    /// `/_control/catalog/items`: `POST` an item (published, or changed when its id exists;
    /// fields left out keep their value) and `DELETE /_control/catalog/items/{id}`.
    func controlContentCatalog(_ request: OriginRequest, segments: [String]) -> OriginResponse {
        guard segments.first == "items" else { return notFound("Control endpoint", request) }
        switch (request.method, segments.count) {
        case (.GET, 1):
            let feed = contentFeed.withLock { $0 }
            return ok([
                "version": .int(feed.version),
                "items": .array(feed.items.values.sorted { $0.id < $1.id }.map(\.json)),
            ])
        case (.POST, 1):
            let body: [String: JSONValue]
            switch objectBody(request, emptyAllowed: false) {
            case .success(let object): body = object
            case .failure(let failure): return failure.response
            }
            return contentFeed.withLock { feed in
                switch Self.feedItem(body, existing: body["id"]?.stringValue.flatMap { feed.items[$0] }, feed: feed) {
                case .success(let item):
                    feed.upsert(item)
                    return ok(["item": item.json, "version": .int(feed.version)])
                case .failure(let message):
                    return badRequest(message.text, request)
                }
            }
        case (.DELETE, 2):
            let id = segments[1]
            return contentFeed.withLock { feed in
                feed.remove(id) ? ok(["removed": .string(id), "version": .int(feed.version)]) : notFound("StateDB item \(id)", request)
            }
        default:
            return methodNotAllowed(request, "GET, POST on /_control/catalog/items; DELETE on /_control/catalog/items/{id}")
        }
    }

    struct CatalogItemError: Error { let text: String }

    static func feedItem(_ body: [String: JSONValue], existing: CatalogItem?, feed: ContentFeed) -> Result<CatalogItem, CatalogItemError> {
        let kept: [String: KeyPath<CatalogItem, String>] = [
            "productId": \.productId, "type": \.type, "title": \.title, "sourceId": \.sourceId, "publishedAt": \.publishedAt,
        ]
        func string(_ key: String) -> String? { body[key]?.stringValue ?? kept[key].flatMap { existing?[keyPath: $0] } }
        guard let id = body["id"]?.stringValue, !id.isEmpty else { return .failure(CatalogItemError(text: "id is required.")) }
        guard let productId = string("productId"), let type = string("type"), let title = string("title"),
            let sourceId = string("sourceId"), let publishedAt = string("publishedAt")
        else {
            return .failure(CatalogItemError(text: "A new item needs productId, type, title, sourceId and publishedAt."))
        }
        guard ["VIDEO", "TRACK"].contains(type) else { return .failure(CatalogItemError(text: "type must be VIDEO or TRACK.")) }
        let categories = body["categories"].flatMap { JSONValue.strings($0) } ?? existing?.categories ?? []
        guard let size = body["sizeBytes"]?.doubleValue.map({ Int64($0) }) ?? existing?.sizeBytes, size >= 0 else {
            return .failure(CatalogItemError(text: "sizeBytes is required."))
        }
        let priority = body["priority"]?.doubleValue.map { Int($0) } ?? existing?.priority ?? 0
        guard (0...100).contains(priority) else { return .failure(CatalogItemError(text: "priority must be 0…100.")) }
        return .success(
            CatalogItem(
                id: id, productId: productId, type: type, title: title, sourceId: sourceId,
                categories: categories, sizeBytes: size,
                durationSeconds: body["durationSeconds"]?.doubleValue ?? existing?.durationSeconds ?? 0,
                publishedAt: publishedAt, priority: priority,
                expiresAt: body["expiresAt"]?.stringValue ?? existing?.expiresAt))
    }
}
