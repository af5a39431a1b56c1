import OriginClient
import Wire

/// `media.locate` (VOC): where an app's own player should read a product — the local entry
/// point when the product is on the device (offlined and valid, or still downloading, served
/// as far as it is on disk, or prepositioned in part, served whole with the origin's help), the
/// origin's URL otherwise. In offline mode the origin is not asked: a product not on the
/// device is refused with `OfflineMode`.
struct MediaLocator: Sendable {
    let stores: @Sendable () async throws -> MediaServerStore
    let control: MediaServerControl
    let origin: OriginClient?
    /// The player's offline mode now (`player.config.set {"offlineMode"}`).
    let offlineMode: @Sendable () async -> Bool

    func locate(productId: String) async throws -> JSONValue {
        // The interactive deadline counts from the call's arrival, the catalog's read included.
        let retry = RetryPolicy.interactive.startingNow()
        if let product = try await stores().product(productId), product.isServed {
            let entry = "/p/\(product.productId)/\(product.main.name)"
            let state = product.validity == .offlinedAndValid ? "OFFLINED_AND_VALID" : product.isPartial ? "PARTIALLY_CACHED" : "DOWNLOADING"
            return [
                "source": "local", "productId": .string(product.productId), "state": .string(state),
                "manifestType": .string(product.manifestType),
                "path": .string("media/" + product.main.localPath),
                // nil while the server is stopped: media.server.start gives it a URL.
                "url": control.url.map { .string($0 + entry) } ?? .null,
            ]
        }
        if await offlineMode() {
            throw RPCErrorKind.offlineMode.error(
                "\(productId) is not on this device, and offline mode keeps the player from asking the origin. "
                    + "Offline the product first, or turn offline mode off (player.config.set {\"offlineMode\": false}).")
        }
        guard let origin else {
            throw PlayerError(.notPlayable, "\(productId) is not on this device and no origin is configured.")
        }
        let info = try await origin.get("/v1/playbackinfo/\(productId)", query: ["mode": "stream"], retry: retry)
        guard let raw = info["manifest"]?["url"]?.stringValue else {
            throw PlayerError(.notPlayable, "the origin gave no URL for \(productId).")
        }
        return [
            "source": "remote", "productId": .string(info["productId"]?.stringValue ?? productId),
            "manifestType": .string(info["manifestType"]?.stringValue ?? "progressive"),
            "url": .string(try origin.resolveURL(raw)),
        ]
    }
}
