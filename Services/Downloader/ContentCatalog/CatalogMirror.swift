import Foundation
import Logging
import OriginClient
import Wire

/// The device's copy of the origin's content catalog: fetched at start, on `catalog.refresh`
/// and every `catalog.refreshSeconds`, only what changed since the feed's cursor, and kept in
/// the catalog's tables so every read works offline. Changes go out as events on `catalog`.
actor CatalogMirror {
    private let store: ContentCatalogStore
    private let origin: OriginClient?
    private let events: DownloaderEvents
    private let logger: Logger
    private let products: OfflineProducts
    /// Asked to look again after anything that changes what should be prepositioned.
    private let wake: @Sendable () async -> Void
    private var refreshing: Task<ContentCatalogStore.Delta, Error>?
    /// The last refresh's end and, when it failed, why.
    private var lastRefresh: (at: Date, error: String?)?

    init(
        store: ContentCatalogStore, origin: OriginClient?, products: OfflineProducts, events: DownloaderEvents,
        logger: Logger, wake: @escaping @Sendable () async -> Void
    ) {
        self.store = store
        self.origin = origin
        self.products = products
        self.events = events
        self.logger = logger
        self.wake = wake
    }

    // MARK: Refresh

    /// One refresh; a call while one runs shares its outcome, within its own deadline
    /// (`retry.endsBy`). When the refresh it joined fails on its own schedule (a background
    /// round gives up on a 5xx at once), a call with time left tries on its own, within its
    /// deadline. Cancelling the call that started a refresh (a stop) cancels the refresh.
    func refresh(retry: RetryPolicy) async throws -> ContentCatalogStore.Delta {
        if let refreshing {
            do {
                return try await SharedRefresh.value(of: refreshing, until: retry.endsBy)
            } catch let error where !(error is CancellationError) && retry.endsBy.map({ ContinuousClock.now < $0 }) == true {
                if let again = self.refreshing { return try await SharedRefresh.value(of: again, until: retry.endsBy) }
            }
        }
        return try await startRefresh(retry: retry)
    }

    private func startRefresh(retry: RetryPolicy) async throws -> ContentCatalogStore.Delta {
        // Runs on this actor, which is busy until the wait below: `refreshing` is set before
        // the task can clear it, and it is cleared when the refresh ends, not when a waiter
        // gives up, so two refreshes never apply at once.
        let task = Task {
            defer { refreshing = nil }
            return try await self.fetchAndApply(retry: retry)
        }
        refreshing = task
        do {
            let delta = try await withTaskCancellationHandler {
                try await SharedRefresh.value(of: task, until: retry.endsBy)
            } onCancel: {
                task.cancel()
            }
            lastRefresh = (Date(), nil)
            return delta
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            lastRefresh = (Date(), "\(error)")
            throw error
        }
    }

    /// `contentCatalog` in `service.status`.
    func status() async -> JSONValue {
        var fields: [String: JSONValue] = [:]
        if let counts = try? await store.counts() {
            fields = [
                "items": .number(Double(counts.items)), "prepositioned": .number(Double(counts.prepositioned)),
                "prepositionedBytes": .number(Double(counts.prepositionedBytes)),
                "subscribedSources": .number(Double(counts.subscribed)), "selectedCategories": .number(Double(counts.selected)),
            ]
        }
        fields["lastRefreshAt"] = lastRefresh.map { .string(UTCTimestamp.rfc3339($0.at)) } ?? .null
        fields["lastRefreshError"] = lastRefresh?.error.map(JSONValue.string) ?? .null
        return .object(fields)
    }

    private func fetchAndApply(retry: RetryPolicy) async throws -> ContentCatalogStore.Delta {
        guard let origin else { throw DownloaderError.noOrigin() }
        let sources = try CatalogFeed.sources(try await origin.get("/v1/catalog/sources", retry: retry))
        let categories = try CatalogFeed.categories(try await origin.get("/v1/catalog/categories", retry: retry))
        let cursor = try await store.cursor()
        var full = cursor == nil
        var answer: JSONValue
        do {
            answer = try await origin.get("/v1/catalog/items", query: cursor.map { ["since": $0] } ?? [:], retry: retry)
        } catch let error as OriginError where cursor != nil && error.status.map({ (400..<500).contains($0) }) == true {
            // The origin no longer knows the cursor (it restarted, or forgot): take everything.
            logger.info("catalog cursor refused (\(error.name)); fetching the whole catalog")
            full = true
            answer = try await origin.get("/v1/catalog/items", retry: retry)
        }
        let changes = try CatalogFeed.changes(answer)
        for reason in changes.refused { logger.warning("catalog item refused: \(reason)") }
        let delta = try await store.apply(sources: sources, categories: categories, changes: changes, full: full, now: Date())
        for token in delta.tokensToDelete {
            // A removed item's prepositioned content goes; a station's or an explicit request's stays.
            _ = try? await products.delete(token: token)
        }
        if delta.sourcesChanged { events.publish(.sourcesChanged()) }
        if delta.categoriesChanged { events.publish(.categoriesChanged()) }
        if delta.itemsChanged { publishItemsChanged(added: delta.added, changed: delta.changed, removed: delta.removed) }
        if delta.itemsChanged || delta.sourcesChanged || delta.categoriesChanged {
            logger.info("catalog refreshed: \(delta.added.count) added, \(delta.changed.count) changed, \(delta.removed.count) removed")
        }
        await wake()
        return delta
    }

    func publishItemsChanged(added: [String] = [], changed: [String] = [], removed: [String] = []) {
        events.publish(.itemsChanged(added: added, changed: changed, removed: removed))
    }

    // MARK: Reads

    func sources(sort: [CatalogQuery.SortKey]) async throws -> JSONValue {
        let rows = CatalogQuery.sortedNamed(try await store.sources(), by: sort, id: \.id, name: \.name)
        return ["sources": .array(rows.map { ["id": .string($0.id), "name": .string($0.name), "subscribed": .bool($0.subscribed)] })]
    }

    func categories(filter: CatalogQuery.CategoryFilter, sort: [CatalogQuery.SortKey]) async throws -> JSONValue {
        let all = try await store.categories()
        let items = try await store.items()
        var counts: [String: Int] = [:]
        for row in items { for category in Set(row.item.categories) { counts[category, default: 0] += 1 } }
        let chosen: [ContentCatalogStore.CategoryRow]
        switch filter {
        case .all: chosen = all
        case .selected: chosen = all.filter(\.selected)
        case .selectedWithContent: chosen = all.filter { $0.selected && counts[$0.id, default: 0] > 0 }
        case .subcategories(let parent):
            guard all.contains(where: { $0.id == parent }) else { throw DownloaderError.unknownCategory(parent) }
            chosen = all.filter { $0.parentId == parent }
        case .search(let text):
            chosen = all.filter { CatalogQuery.CategoryFilter.matches($0.name, search: text) }
        case .suggestions:
            chosen = try await suggested(all, items: items)
        }
        let sorted = CatalogQuery.sortedNamed(chosen, by: sort, id: \.id, name: \.name, count: { counts[$0.id, default: 0] })
        return [
            "categories": .array(
                sorted.map {
                    [
                        "id": .string($0.id), "name": .string($0.name), "parentId": $0.parentId.map(JSONValue.string) ?? .null,
                        "selected": .bool($0.selected), "itemCount": .number(Double(counts[$0.id, default: 0])),
                    ]
                })
        ]
    }

    /// The `suggestions` filter: categories not selected that hold items (not removed) of a
    /// subscribed source — selecting one would bring content to the device — those with the
    /// most such items first, then in the origin's order.
    private func suggested(_ all: [ContentCatalogStore.CategoryRow], items: [ContentCatalogStore.ItemRow]) async throws
        -> [ContentCatalogStore.CategoryRow]
    {
        let subscribed = Set(try await store.sources().filter(\.subscribed).map(\.id))
        var offered: [String: Int] = [:]
        for row in items where !row.removed && subscribed.contains(row.item.sourceId) {
            for category in Set(row.item.categories) { offered[category, default: 0] += 1 }
        }
        return all.enumerated().filter { !$0.element.selected && offered[$0.element.id, default: 0] > 0 }
            .sorted { (offered[$0.element.id]!, $1.offset) > (offered[$1.element.id]!, $0.offset) }
            .map(\.element)
    }

    func items(filter: CatalogQuery.ItemFilter, categoryId: String?, sort: [CatalogQuery.SortKey]) async throws -> JSONValue {
        if let categoryId, !(try await store.categories()).contains(where: { $0.id == categoryId }) {
            throw DownloaderError.unknownCategory(categoryId)
        }
        let rows = CatalogQuery.sorted(CatalogQuery.items(try await store.items(), filter: filter, categoryId: categoryId), by: sort)
        return ["items": .array(rows.map(Self.json))]
    }

    static func json(_ row: ContentCatalogStore.ItemRow) -> JSONValue {
        let item = row.item
        return [
            "id": .string(item.id), "productId": .string(item.productId), "type": .string(item.type), "title": .string(item.title),
            "sourceId": .string(item.sourceId), "categories": .array(item.categories.map(JSONValue.string)),
            "state": .string(row.state), "saved": .bool(row.saved), "viewed": .bool(row.viewed),
            "sizeBytes": .number(Double(item.sizeBytes)), "publishedAt": .string(item.publishedAt),
            "priority": .number(Double(item.priority)), "durationSeconds": item.durationSeconds.map(JSONValue.number) ?? .null,
            "removed": .bool(row.removed), "token": row.token.map(JSONValue.string) ?? .null,
            "automatic": .bool(row.automatic),
        ]
    }

    // MARK: Choices

    func subscribe(sourceId: String, _ on: Bool) async throws -> JSONValue {
        guard let changed = try await store.setSubscribed(sourceId, on) else { throw DownloaderError.unknownSource(sourceId) }
        if changed {
            events.publish(.sourcesChanged(sourceId: sourceId, subscribed: on))
            await wake()
        }
        return ["sourceId": .string(sourceId), "subscribed": .bool(on)]
    }

    func select(categoryId: String, _ on: Bool) async throws -> JSONValue {
        guard let changed = try await store.setSelected(categoryId, on) else { throw DownloaderError.unknownCategory(categoryId) }
        if changed {
            events.publish(.categoriesChanged(categoryId: categoryId, selected: on))
            await wake()
        }
        return ["categoryId": .string(categoryId), "selected": .bool(on)]
    }

    func save(itemId: String, _ on: Bool) async throws -> JSONValue {
        guard let outcome = try await store.setSaved(itemId, on) else { throw DownloaderError.unknownItem(itemId) }
        if let token = outcome.tokenToDelete { _ = try? await products.delete(token: token) }
        if outcome.forgotten {
            publishItemsChanged(removed: [itemId])
        } else if outcome.changed {
            publishItemsChanged(changed: [itemId])
        }
        return ["itemId": .string(itemId), "saved": .bool(on), "forgotten": .bool(outcome.forgotten)]
    }
}
