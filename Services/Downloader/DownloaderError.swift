import Wire

/// The downloader's own failures, codes 1000–1999 (docs/protocol.md), each with a stable name.
/// Failures that come from the origin keep the origin client's `OriginError` (4000–4999).
struct DownloaderError: Error, Sendable, CustomStringConvertible, RPCErrorConvertible {
    var code: Int
    var name: String
    var message: String
    /// Machine-readable fields for `error.data` beside `name`.
    var details: [String: JSONValue] = [:]

    var description: String { "\(name): \(message)" }
    var rpcError: RPCError { RPCError(code: code, name: name, message: message, details: details) }

    static func noOrigin() -> DownloaderError {
        DownloaderError(code: 1000, name: "NoOrigin",
                        message: "No origin is configured; set origin in the config file or pass --origin.")
    }
    static func notDownloadable(_ id: String) -> DownloaderError {
        DownloaderError(code: 1001, name: "NotDownloadable",
                        message: "\(id) may be streamed but not downloaded (canBeDownloaded is false).")
    }
    static func unknownToken(_ token: String) -> DownloaderError {
        DownloaderError(code: 1002, name: "UnknownToken",
                        message: "No offline request has the token \(token); offline.list shows the known ones.")
    }
    static func hostileManifest(_ why: String) -> DownloaderError {
        DownloaderError(code: 1003, name: "BadManifest",
                        message: "The origin sent a manifest Cassette refuses: \(why). Nothing was written.")
    }
    static func notSupported(_ what: String) -> DownloaderError {
        DownloaderError(code: 1004, name: "NotSupported", message: what)
    }
    static func invalidState(_ what: String) -> DownloaderError {
        DownloaderError(code: 1005, name: "InvalidState", message: what)
    }
    static func storage(_ what: String) -> DownloaderError {
        DownloaderError(code: 1006, name: "StorageError", message: what)
    }
    static func noLicense(_ token: String) -> DownloaderError {
        DownloaderError(code: 1007, name: "NoLicense",
                        message: "\(token) has no license to renew; offline.preloadLicense or offline.add with rentalSeconds or purchase requests one.")
    }
    /// An HLS product asked for in a language it has no rendition in (Brightcove secondary
    /// tracks): `data` names the field and the languages offered.
    static func languageNotOffered(field: String, wanted: String, type: String, offered: [String], bandwidth: Int) -> DownloaderError {
        let list = offered.isEmpty ? "none" : offered.joined(separator: ", ")
        return DownloaderError(code: 1008, name: "LanguageNotOffered",
                               message: "params.\(field): the chosen variant (BANDWIDTH \(bandwidth)) has no \(type) rendition in \(wanted.prefix(40).debugDescription); offered: \(list). offline.variants lists them.",
                               details: ["field": .string(field), "language": .string(String(wanted.prefix(40))),
                                         "offered": .array(offered.map(JSONValue.string))])
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
