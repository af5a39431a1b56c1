import Foundation
import Wire

/// Every event the downloader publishes, each case with its data (docs/protocol.md, downloader
/// section). `topic`, `type` and `data` are the one place they are put on the wire.
enum DownloaderEvent: Sendable {
    // Offline products (topic `downloads`).
    case offlineStarted(ProductRef, revalidation: Bool = false)
    /// Over all the product's files, the figures `offline.status` gives (`ProductFileStore.statusFields`).
    case offlineProgress(ProductRef, totals: [String: JSONValue])
    /// The progress of a product's own file alone, when its totals could not be read.
    case fileProgress(ProductRef, bytesOnDisk: Int64, sizeBytes: Int64)
    case offlineDone(ProductRef, revalidation: Bool = false)
    case offlineFailed(ProductRef, error: String, cause: String? = nil, reason: String)
    case offlineDeleted(ProductRef)
    case allOfflinesDeleted(count: Int)
    case offlineRevalidated(ProductRef, result: String)
    case revalidationFailed(ProductRef, error: String, reason: String)
    /// `LicenseAcquired`, `LicenseRenewed`.
    case license(LicenseEvent, ProductRef, kind: String, expiresAt: Date?)
    /// A product or a station item changed state (`error` and `reason` say why it waits or failed).
    case itemStateChanged(DownloadItem, state: String, error: String? = nil, reason: String? = nil)

    // Stations (topic `downloads`).
    case itemRefused(stationId: String, itemId: String, reason: String)
    case itemEvicted(stationId: String, itemId: String, sizeBytes: Int64)
    case stationDownloadProgress(StationCounts)
    case stationDownloadComplete(StationCounts)
    case stationExpired(stationId: String, onExpiry: String)
    case policyChanged([String: JSONValue])

    // Time to silence (topic `downloads`; `SilenceWatch`).
    /// `silentAt` came nearer than `forecastWarnHours`.
    case silenceForecast(silentAt: Date, playableSeconds: Double, warnHours: Double)
    /// `silentAt` is beyond `forecastWarnHours` again (nil: nothing expires).
    case silenceForecastCleared(silentAt: Date?, playableSeconds: Double, warnHours: Double)

    // The network and the origin's reachability (topic `network`).
    case networkChanged([String: JSONValue])
    /// `Available`, `NotAvailable` or `OfflineOnly`, with how many stations the device holds.
    case stationsAvailability(String, localOffline: Int)

    // The content catalog (topic `catalog`).
    /// All sources changed (a refresh), or one source's subscription.
    case sourcesChanged(sourceId: String? = nil, subscribed: Bool? = nil)
    /// All categories changed (a refresh), or one category's selection.
    case categoriesChanged(categoryId: String? = nil, selected: Bool? = nil)
    case itemsChanged(added: [String], changed: [String], removed: [String])
    case catalogItemStateChanged(itemId: String, productId: String, state: String)

    enum LicenseEvent: String, Sendable {
        case acquired = "LicenseAcquired"
        case renewed = "LicenseRenewed"
    }

    /// What an `ItemStateChanged` is about.
    enum DownloadItem: Sendable {
        case product(ProductRef)
        case stationItem(stationId: String, itemId: String)
    }

    struct StationCounts: Sendable {
        var stationId: String
        var pending: Int
        var failed: Int
        var total: Int
    }

    var topic: String {
        switch self {
        case .networkChanged, .stationsAvailability: "network"
        case .sourcesChanged, .categoriesChanged, .itemsChanged, .catalogItemStateChanged: "catalog"
        default: "downloads"
        }
    }

    var type: String {
        switch self {
        case .offlineStarted: "OfflineStarted"
        case .offlineProgress, .fileProgress: "OfflineProgress"
        case .offlineDone: "OfflineDone"
        case .offlineFailed: "OfflineFailed"
        case .offlineDeleted: "OfflineDeleted"
        case .allOfflinesDeleted: "AllOfflinesDeleted"
        case .offlineRevalidated: "OfflineRevalidated"
        case .revalidationFailed: "RevalidationFailed"
        case .license(let event, _, _, _): event.rawValue
        case .itemStateChanged, .catalogItemStateChanged: "ItemStateChanged"
        case .itemRefused: "ItemRefused"
        case .itemEvicted: "ItemEvicted"
        case .stationDownloadProgress: "StationDownloadProgress"
        case .stationDownloadComplete: "StationDownloadComplete"
        case .stationExpired: "StationExpired"
        case .policyChanged: "PolicyChanged"
        case .silenceForecast: "SilenceForecast"
        case .silenceForecastCleared: "SilenceForecastCleared"
        case .networkChanged: "NetworkChanged"
        case .stationsAvailability(let availability, _): availability
        case .sourcesChanged: "SourcesChanged"
        case .categoriesChanged: "CategoriesChanged"
        case .itemsChanged: "ItemsChanged"
        }
    }

    /// The event's data; the product's token is where `DownloaderEvents` adds its `referenceId`.
    var data: [String: JSONValue] {
        switch self {
        case .offlineStarted(let product, let revalidation), .offlineDone(let product, let revalidation):
            return product.fields.adding(revalidation ? ["revalidation": true] : [:])
        case .offlineProgress(let product, var totals):
            totals.removeValue(forKey: "images")
            return totals.adding(product.fields)
        case .fileProgress(let product, let bytes, let size):
            return product.fields.adding([
                "progress": .number(Double(bytes * 100 / max(1, size))),
                "bytesOnDisk": .number(Double(bytes)), "sizeBytes": .number(Double(size)),
            ])
        case .offlineFailed(let product, let error, let cause, let reason):
            return product.fields.adding(["error": .string(error), "reason": .string(reason)])
                .adding(cause.map { ["cause": .string($0)] } ?? [:])
        case .offlineDeleted(let product):
            return product.fields
        case .allOfflinesDeleted(let count):
            return ["count": .number(Double(count))]
        case .offlineRevalidated(let product, let result):
            return product.fields.adding(["result": .string(result)])
        case .revalidationFailed(let product, let error, let reason):
            return product.fields.adding(["error": .string(error), "reason": .string(reason)])
        case .license(_, let product, let kind, let expiresAt):
            return product.fields.adding(["kind": .string(kind), "expiresAt": expiresAt.map { .string(UTCTimestamp.rfc3339($0)) } ?? .null])
        case .itemStateChanged(let item, let state, let error, let reason):
            var data: [String: JSONValue] = ["state": .string(state)]
            switch item {
            case .product(let product): data.merge(product.fields) { $1 }
            case .stationItem(let stationId, let itemId): data.merge(["stationId": .string(stationId), "itemId": .string(itemId)]) { $1 }
            }
            if let error { data["error"] = .string(error) }
            if let reason { data["reason"] = .string(reason) }
            return data
        case .itemRefused(let stationId, let itemId, let reason):
            return ["stationId": .string(stationId), "itemId": .string(itemId), "reason": .string(reason)]
        case .itemEvicted(let stationId, let itemId, let sizeBytes):
            return ["stationId": .string(stationId), "itemId": .string(itemId), "sizeBytes": .number(Double(sizeBytes))]
        case .stationDownloadProgress(let counts), .stationDownloadComplete(let counts):
            return [
                "stationId": .string(counts.stationId), "pending": .number(Double(counts.pending)),
                "failed": .number(Double(counts.failed)), "total": .number(Double(counts.total)),
            ]
        case .stationExpired(let stationId, let onExpiry):
            return ["stationId": .string(stationId), "onExpiry": .string(onExpiry)]
        case .policyChanged(let fields), .networkChanged(let fields):
            return fields
        case .silenceForecast(let silentAt, let seconds, let hours):
            return Self.forecastFields(silentAt: silentAt, playableSeconds: seconds, warnHours: hours)
        case .silenceForecastCleared(let silentAt, let seconds, let hours):
            return Self.forecastFields(silentAt: silentAt, playableSeconds: seconds, warnHours: hours)
        case .stationsAvailability(_, let localOffline):
            return ["localOffline": .number(Double(localOffline))]
        case .sourcesChanged(let sourceId, let subscribed):
            guard let sourceId, let subscribed else { return [:] }
            return ["sourceId": .string(sourceId), "subscribed": .bool(subscribed)]
        case .categoriesChanged(let categoryId, let selected):
            guard let categoryId, let selected else { return [:] }
            return ["categoryId": .string(categoryId), "selected": .bool(selected)]
        case .itemsChanged(let added, let changed, let removed):
            return [
                "added": .array(added.map(JSONValue.string)), "changed": .array(changed.map(JSONValue.string)),
                "removed": .array(removed.map(JSONValue.string)),
            ]
        case .catalogItemStateChanged(let itemId, let productId, let state):
            return ["itemId": .string(itemId), "productId": .string(productId), "state": .string(state)]
        }
    }

    private static func forecastFields(silentAt: Date?, playableSeconds: Double, warnHours: Double) -> [String: JSONValue] {
        [
            "silentAt": silentAt.map { .string(UTCTimestamp.rfc3339($0)) } ?? .null,
            "playableSeconds": .number((playableSeconds * 1000).rounded() / 1000), "warnHours": .number(warnHours),
        ]
    }
}

extension ProductRef {
    /// The fields that name a product in its events.
    var fields: [String: JSONValue] { ["token": .string(token), "productId": .string(productId)] }
}

extension Dictionary where Key == String, Value == JSONValue {
    fileprivate func adding(_ other: [String: JSONValue]) -> [String: JSONValue] { merging(other) { $1 } }
}
