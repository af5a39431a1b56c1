import Foundation
import MediaDecoder
import Wire

/// Why source selection (the TIDAL table) or a byte source refused or failed, with a code of
/// the player's table (`PlayerError.Code`, 2100–2199). `name` is stable: it is the wire's
/// `error.data.name`. Origin refusals are not wrapped: they travel as `OriginError` (4000 + subStatus).
struct SourceError: Error, Sendable, Equatable, CustomStringConvertible, RPCErrorConvertible {
    var name: String
    var code: Int
    var message: String
    var details: [String: JSONValue] = [:]

    init(name: String, code: Int, message: String, details: [String: JSONValue] = [:]) {
        (self.name, self.code, self.message, self.details) = (name, code, message, details)
    }

    init(_ code: PlayerError.Code, _ message: String, details: [String: JSONValue] = [:]) {
        self.init(name: code.name, code: code.number, message: message, details: details)
    }

    var description: String { "\(name): \(message)" }
    var rpcError: RPCError { RPCError(code: code, name: name, message: message, details: details) }

    /// Offline mode and the product is not offlined (TIDAL: an illegal playback request).
    static func illegalPlaybackRequest(_ productId: String) -> SourceError {
        SourceError(
            .illegalPlaybackRequest, "\(productId) is not offlined and the app is in offline mode; go online or offline it first",
            details: ["productId": .string(productId)])
    }

    /// Offlined, but its validity ended (past `offlineValidUntil`, its license's `expiresAt` or
    /// the station's expiry), before it was played or while it played; `endedAt` when known.
    static func offlineNotValid(_ productId: String, endedAt: Date? = nil) -> SourceError {
        let when = endedAt.map { " (its license or offline window ended at \(UTCTimestamp.rfc3339($0)))" } ?? ""
        return SourceError(
            .offlineNotValid,
            "the offlined copy of \(productId) is no longer valid for playback\(when); "
                + "it needs re-validation online or a renewed license",
            details: ["productId": .string(productId)])
    }

    /// Online, not on the device, and no origin configured to stream it from.
    static func notOfflined(_ productId: String) -> SourceError {
        SourceError(
            .notOfflined, "\(productId) is not on the device and no origin is configured to stream it",
            details: ["productId": .string(productId)])
    }

    /// The bytes cannot be had: the origin's playbackinfo or media answer is unusable, a local
    /// file the catalog names is missing.
    static func sourceUnavailable(_ message: String) -> SourceError {
        SourceError(.sourceUnavailable, message)
    }

    /// The download a playing file depended on failed. The name is the downloader's own error
    /// name (`offlineProducts.error`, e.g. `NetworkError`) when it recorded one.
    static func downloadFailed(name: String?, message: String) -> SourceError {
        SourceError(name: name ?? PlayerError.Code.downloadFailed.name, code: PlayerError.Code.downloadFailed.number, message: message)
    }

    /// `productId` is not a plain origin id.
    static func invalidProductId(_ productId: String) -> SourceError {
        SourceError(
            name: "InvalidParams", code: -32602,
            message: "productId must be 1–128 of [A-Za-z0-9._-], got \(productId.debugDescription)",
            details: ["field": "productId"])
    }

    /// A read or seek after (or during) `close()`.
    static func closed(_ what: String) -> SourceError {
        SourceError(.sourceClosed, "\(what) was closed")
    }

    /// The local file (a download's `.part` or a cache file) could not be read.
    static func readFailed(_ message: String) -> SourceError {
        SourceError(.readFailed, message)
    }

    /// The origin changed the stream's bytes (another ETag) between two ranges of one playback.
    static func streamChanged(_ url: String) -> SourceError {
        SourceError(.streamChanged, "the origin changed \(url) while it was being played")
    }
}

extension SourceError {
    /// The event a source emits when it fails with this error.
    var event: ByteSourceEvent { .failed(name: name, message: message) }
}
