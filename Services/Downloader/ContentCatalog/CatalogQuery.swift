import Foundation
import Wire

/// The filters and sort orders of the catalog's sets (the PCD/VOC filter table), applied to the
/// mirror's rows. Pure: the methods read the rows, this picks and orders them.
enum CatalogQuery {
    /// `catalog.items` filters; the `videos…` ones keep only `type: VIDEO`.
    enum ItemFilter: String, CaseIterable, Sendable {
        case all, downloading, withCategory, downloadedWithCategory, saved, downloadedNotViewed
        case videos, videosDownloading, videosWithCategory, videosDownloadedWithCategory
        case videosDownloadedOrDownloadingWithCategory, videosSaved, videosDownloadedNotViewed

        var videosOnly: Bool { rawValue.hasPrefix("videos") }
        var needsCategory: Bool { rawValue.lowercased().hasSuffix("withcategory") }
    }

    /// States counted as downloading: queued, downloading, or waiting to go on (idle).
    static let downloadingStates: Set<String> = ["queued", "downloading", "idle"]
    static let downloadedStates: Set<String> = ["cached", "partiallyCached"]

    static func items(_ rows: [ContentCatalogStore.ItemRow], filter: ItemFilter, categoryId: String?) -> [ContentCatalogStore.ItemRow] {
        rows.filter { row in
            if filter.videosOnly, row.item.type != "VIDEO" { return false }
            let inCategory = categoryId.map { row.item.categories.contains($0) } ?? true
            let downloading = downloadingStates.contains(row.state)
            let downloaded = downloadedStates.contains(row.state)
            switch filter {
            case .all, .videos: return true
            case .downloading, .videosDownloading: return downloading
            case .withCategory, .videosWithCategory: return inCategory
            case .downloadedWithCategory, .videosDownloadedWithCategory: return inCategory && downloaded
            case .videosDownloadedOrDownloadingWithCategory: return inCategory && (downloaded || downloading)
            case .saved, .videosSaved: return row.saved
            case .downloadedNotViewed, .videosDownloadedNotViewed: return downloaded && !row.viewed
            }
        }
    }

    /// One sort descriptor: `{"key","ascending"}`.
    struct SortKey: Sendable, Equatable {
        var key: String
        var ascending: Bool
    }

    static let itemSortKeys = ["title", "publishedAt", "sizeBytes", "priority"]
    static let categorySortKeys = ["name", "id", "itemCount"]
    static let sourceSortKeys = ["name", "id"]

    /// Reads `sort` (absent: the default order), refusing unknown keys with -32602.
    static func sortKeys(_ value: [JSONValue]?, allowed: [String]) throws -> [SortKey] {
        guard let value else { return [] }
        return try value.enumerated().map { index, entry in
            guard let object = entry.objectValue, let key = object["key"]?.stringValue, allowed.contains(key),
                Set(object.keys).isSubset(of: ["key", "ascending"])
            else {
                throw RPCError.invalidParams("params.sort[\(index)] must be {\"key\",\"ascending\"} with key one of \(allowed.joined(separator: ", ")).")
            }
            var ascending = true
            if let flag = object["ascending"] {
                guard let value = flag.boolValue else {
                    throw RPCError.invalidParams("params.sort[\(index)].ascending must be true or false.")
                }
                ascending = value
            }
            return SortKey(key: key, ascending: ascending)
        }
    }

    /// Items in the descriptors' order; ties, and no descriptors, by priority (highest first),
    /// then newest first, then id.
    static func sorted(_ rows: [ContentCatalogStore.ItemRow], by keys: [SortKey]) -> [ContentCatalogStore.ItemRow] {
        let fallback = [SortKey(key: "priority", ascending: false), SortKey(key: "publishedAt", ascending: false)]
        return rows.sorted { a, b in
            for sort in keys + fallback {
                let order: ComparisonResult
                switch sort.key {
                case "title": order = a.item.title.caseInsensitiveCompare(b.item.title)
                case "publishedAt": order = compare(a.item.publishedAt, b.item.publishedAt)
                case "sizeBytes": order = compare(a.item.sizeBytes, b.item.sizeBytes)
                default: order = compare(a.item.priority, b.item.priority)
                }
                if order != .orderedSame { return (order == .orderedAscending) == sort.ascending }
            }
            return a.item.id < b.item.id
        }
    }

    static func compare<T: Comparable>(_ a: T, _ b: T) -> ComparisonResult {
        a < b ? .orderedAscending : a > b ? .orderedDescending : .orderedSame
    }

    /// Sorts named rows (sources, categories) by `name`, `id` or `itemCount`; the origin's
    /// order when no descriptor is given.
    static func sortedNamed<T>(
        _ rows: [T], by keys: [SortKey], id: (T) -> String, name: (T) -> String,
        count: (T) -> Int = { _ in 0 }
    ) -> [T] {
        guard !keys.isEmpty else { return rows }
        return rows.enumerated().sorted { a, b in
            for sort in keys {
                let order: ComparisonResult
                switch sort.key {
                case "name": order = name(a.element).caseInsensitiveCompare(name(b.element))
                case "itemCount": order = compare(count(a.element), count(b.element))
                default: order = compare(id(a.element), id(b.element))
                }
                if order != .orderedSame { return (order == .orderedAscending) == sort.ascending }
            }
            return a.offset < b.offset
        }.map(\.element)
    }

    /// `catalog.categories` filters (the PCD/VOC `VocItemCategoryFilter`): `all`, `selected`,
    /// `selectedWithContent`, `subcategories:{id}`, `search:{text}` (the search field: names
    /// holding the text) and `suggestions` (categories worth selecting: not selected, holding
    /// items of a subscribed source).
    enum CategoryFilter: Equatable, Sendable {
        case all, selected, selectedWithContent, suggestions
        case subcategories(String)
        case search(String)

        /// The longest search text, in characters.
        static let maxSearchLength = 128

        init?(_ text: String) {
            switch text {
            case "all": self = .all
            case "selected": self = .selected
            case "selectedWithContent": self = .selectedWithContent
            case "suggestions": self = .suggestions
            default:
                if text.hasPrefix("subcategories:") {
                    self = .subcategories(String(text.dropFirst("subcategories:".count)))
                } else if text.hasPrefix("search:") {
                    self = .search(String(text.dropFirst("search:".count)))
                } else {
                    return nil
                }
            }
        }

        /// The search field's match: `text` anywhere in `name`, case and accents aside
        /// (`vid` finds "Video", `e` finds "É…"); surrounding blanks of the text are ignored.
        static func matches(_ name: String, search text: String) -> Bool {
            let needle = text.trimmingCharacters(in: .whitespaces)
            return name.range(of: needle, options: [.caseInsensitive, .diacriticInsensitive]) != nil
        }
    }
}
