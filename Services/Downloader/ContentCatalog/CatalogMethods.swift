import Foundation
import OriginClient
import Wire

/// `catalog.*` (docs/protocol.md, "Content catalog"): every read answers from the catalog's
/// tables, so it works with the origin out of reach; only `catalog.refresh` asks the origin.
enum CatalogMethods {
    struct SourcesParams: ClosedParams, Sendable {
        var sort: [JSONValue]?
        enum CodingKeys: String, CodingKey, CaseIterable { case sort }
    }
    struct CategoriesParams: ClosedParams, Sendable {
        var filter: String?
        var sort: [JSONValue]?
        enum CodingKeys: String, CodingKey, CaseIterable { case filter, sort }
    }
    struct ItemsParams: ClosedParams, Sendable {
        var filter: String?
        var categoryId: String?
        var sort: [JSONValue]?
        enum CodingKeys: String, CodingKey, CaseIterable { case filter, categoryId, sort }
    }
    struct SubscribeParams: ClosedParams, Sendable {
        var sourceId: String
        var subscribed: Bool
        enum CodingKeys: String, CodingKey, CaseIterable { case sourceId, subscribed }
    }
    struct SelectParams: ClosedParams, Sendable {
        var categoryId: String
        var selected: Bool
        enum CodingKeys: String, CodingKey, CaseIterable { case categoryId, selected }
    }
    struct SaveParams: ClosedParams, Sendable {
        var itemId: String
        var saved: Bool
        enum CodingKeys: String, CodingKey, CaseIterable { case itemId, saved }
    }
    struct Empty: ClosedParams, Sendable {
        enum CodingKeys: CodingKey, CaseIterable {}
    }

    static func register(on router: inout RPCRouter, core: Task<DownloaderCore, Error>) {
        router.register("catalog.sources", params: SourcesParams.self) { p, _ in
            let sort = try CatalogQuery.sortKeys(p.sort, allowed: CatalogQuery.sourceSortKeys)
            return try await core.value.catalog.sources(sort: sort)
        }
        router.register("catalog.categories", params: CategoriesParams.self) { p, _ in
            guard let filter = CatalogQuery.CategoryFilter(p.filter ?? "all") else {
                throw RPCError.invalidParams(
                    """
                    params.filter must be all, selected, selectedWithContent, suggestions, subcategories:{categoryId} or search:{text}.
                    """)
            }
            if case .subcategories(let id) = filter { try DownloaderMethods.checkId(id, field: "filter (subcategories:)") }
            if case .search(let text) = filter {
                let trimmed = text.trimmingCharacters(in: .whitespaces)
                guard !trimmed.isEmpty, trimmed.count <= CatalogQuery.CategoryFilter.maxSearchLength else {
                    throw RPCError.invalidParams("params.filter search:{text} needs 1 to \(CatalogQuery.CategoryFilter.maxSearchLength) characters of text.")
                }
            }
            let sort = try CatalogQuery.sortKeys(p.sort, allowed: CatalogQuery.categorySortKeys)
            return try await core.value.catalog.categories(filter: filter, sort: sort)
        }
        router.register("catalog.items", params: ItemsParams.self) { p, _ in
            guard let filter = CatalogQuery.ItemFilter(rawValue: p.filter ?? "all") else {
                throw RPCError.invalidParams("params.filter must be one of \(CatalogQuery.ItemFilter.allCases.map(\.rawValue).joined(separator: ", ")).")
            }
            if filter.needsCategory, p.categoryId == nil {
                throw RPCError.invalidParams("params.categoryId is needed with the \(filter.rawValue) filter.")
            }
            if let id = p.categoryId {
                guard filter.needsCategory else {
                    throw RPCError.invalidParams("params.categoryId applies only to the …WithCategory filters.")
                }
                try DownloaderMethods.checkId(id, field: "categoryId")
            }
            let sort = try CatalogQuery.sortKeys(p.sort, allowed: CatalogQuery.itemSortKeys)
            return try await core.value.catalog.items(filter: filter, categoryId: p.categoryId, sort: sort)
        }
        router.register("catalog.subscribe", params: SubscribeParams.self) { p, _ in
            try DownloaderMethods.checkId(p.sourceId, field: "sourceId")
            return try await core.value.catalog.subscribe(sourceId: p.sourceId, p.subscribed)
        }
        router.register("catalog.select", params: SelectParams.self) { p, _ in
            try DownloaderMethods.checkId(p.categoryId, field: "categoryId")
            return try await core.value.catalog.select(categoryId: p.categoryId, p.selected)
        }
        router.register("catalog.save", params: SaveParams.self) { p, _ in
            try DownloaderMethods.checkId(p.itemId, field: "itemId")
            return try await core.value.catalog.save(itemId: p.itemId, p.saved)
        }
        // Someone waits: the interactive deadline for the whole call (its three requests and a
        // refresh already running alike), then OriginUnreachable; the mirror stays as it was.
        router.register("catalog.refresh", params: Empty.self) { _, _ in
            let retry = RetryPolicy.interactive.startingNow()
            let delta = try await core.value.catalog.refresh(retry: retry)
            return JSONValue.object([
                "added": .array(delta.added.map(JSONValue.string)), "changed": .array(delta.changed.map(JSONValue.string)),
                "removed": .array(delta.removed.map(JSONValue.string)),
                "sourcesChanged": .bool(delta.sourcesChanged), "categoriesChanged": .bool(delta.categoriesChanged),
            ])
        }
    }
}
