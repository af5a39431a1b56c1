import Wire

/// The downloader's numbered errors, codes 1000–1999 (docs/protocol.md), all of them in this one
/// table, each with a stable name. The errors every service shares (`OriginUnreachable` 1010,
/// `StorageFull` 1011, `OfflineMode` 1012, `TLSFailed` 1013) are `RPCErrorKind`'s; failures that
/// come from the origin keep the origin client's `OriginError` (4000–4999).
struct DownloaderError: Error, Sendable, CustomStringConvertible, RPCErrorConvertible {
    enum Kind: Int, Sendable, CaseIterable {
        case noOrigin = 1000
        case notDownloadable = 1001
        case unknownToken = 1002
        case badManifest = 1003
        case notSupported = 1004
        case invalidState = 1005
        case storageError = 1006
        case noLicense = 1007
        case languageNotOffered = 1008
        // The content catalog (PCD/VOC).
        case unknownSource = 1020
        case unknownCategory = 1021
        case unknownItem = 1022

        var name: String {
            switch self {
            case .noOrigin: "NoOrigin"
            case .notDownloadable: "NotDownloadable"
            case .unknownToken: "UnknownToken"
            case .badManifest: "BadManifest"
            case .notSupported: "NotSupported"
            case .invalidState: "InvalidState"
            case .storageError: "StorageError"
            case .noLicense: "NoLicense"
            case .languageNotOffered: "LanguageNotOffered"
            case .unknownSource: "UnknownSource"
            case .unknownCategory: "UnknownCategory"
            case .unknownItem: "UnknownItem"
            }
        }
    }

    var kind: Kind
    var message: String
    /// Machine-readable fields for `error.data` beside `name`.
    var details: [String: JSONValue] = [:]

    init(_ kind: Kind, _ message: String, details: [String: JSONValue] = [:]) {
        self.kind = kind
        self.message = message
        self.details = details
    }

    var code: Int { kind.rawValue }
    var name: String { kind.name }
    var description: String { "\(name): \(message)" }
    var rpcError: RPCError { RPCError(code: code, name: name, message: message, details: details) }

    static func noOrigin() -> DownloaderError {
        DownloaderError(.noOrigin, "No origin is configured; set origin in the config file or pass --origin.")
    }
    static func notDownloadable(_ id: String) -> DownloaderError {
        DownloaderError(.notDownloadable, "\(id) may be streamed but not downloaded (canBeDownloaded is false).")
    }
    static func unknownToken(_ token: String) -> DownloaderError {
        DownloaderError(.unknownToken, "No offline request has the token \(token); offline.list shows the known ones.")
    }
    static func hostileManifest(_ why: String) -> DownloaderError {
        DownloaderError(.badManifest, "The origin sent a manifest Cassette refuses: \(why). Nothing was written.")
    }
    static func notSupported(_ what: String) -> DownloaderError { DownloaderError(.notSupported, what) }
    static func invalidState(_ what: String) -> DownloaderError { DownloaderError(.invalidState, what) }
    static func storage(_ what: String) -> DownloaderError { DownloaderError(.storageError, what) }
    static func noLicense(_ token: String) -> DownloaderError {
        DownloaderError(
            .noLicense,
            "\(token) has no license to renew; offline.preloadLicense or offline.add with rentalSeconds or purchase requests one.")
    }
    static func unknownSource(_ id: String) -> DownloaderError {
        DownloaderError(.unknownSource, "No source \(id) in the catalog; catalog.sources lists them (catalog.refresh fetches the newest).")
    }
    static func unknownCategory(_ id: String) -> DownloaderError {
        DownloaderError(.unknownCategory, "No category \(id) in the catalog; catalog.categories lists them.")
    }
    static func unknownItem(_ id: String) -> DownloaderError {
        DownloaderError(.unknownItem, "No item \(id) in the catalog; catalog.items lists them.")
    }
    /// An HLS product asked for in a language it has no rendition in (Brightcove secondary
    /// tracks): `data` names the field and the languages offered.
    static func languageNotOffered(field: String, wanted: String, type: String, offered: [String], bandwidth: Int) -> DownloaderError {
        let list = offered.isEmpty ? "none" : offered.joined(separator: ", ")
        return DownloaderError(
            .languageNotOffered,
            "params.\(field): the chosen variant (BANDWIDTH \(bandwidth)) has no \(type) rendition in \(wanted.prefix(40).debugDescription); offered: \(list). offline.variants lists them.",
            details: [
                "field": .string(field), "language": .string(String(wanted.prefix(40))),
                "offered": .array(offered.map(JSONValue.string)),
            ])
    }
    /// -32602 naming the field, for ids that are not plain tokens.
    static func badParam(_ field: String, _ value: String) -> RPCError {
        .invalidParams("params.\(field) must match [A-Za-z0-9._-]{1,128}; got \(value.debugDescription.prefix(140)).")
    }
}

/// VOC error codes carried by a Failed item (`offlineProducts.error`, `files.error`); an Idle
/// item's waits (`NetworkError` among them) are `PolicyBlock`.
enum ItemError: String, Sendable {
    case downloadFailed = "DownloadFailed"
    case cancelled = "Cancelled"
    case cacheLimit = "CacheLimit"
    case fileMissing = "FileMissing"
}
