import Wire

/// Event names and topics in one place (docs/protocol.md, downloader section).
/// Download progress and item states go on `downloads`; reachability of the origin
/// (`Available`, `NotAvailable`, `OfflineOnly`) on `network`, next to `NetworkChanged`.
struct DownloaderEvents: Sendable {
    let hub: EventHub
    /// The `referenceId` each token's events carry back to the app.
    let references = ReferenceLoopback()

    /// An event naming a token carries that token's `referenceId` when the app gave one.
    func downloads(_ type: String, _ data: [String: JSONValue]) {
        var data = data
        if data["referenceId"] == nil, let token = data["token"]?.stringValue, let referenceId = references.referenceId(token: token) {
            data["referenceId"] = .string(referenceId)
        }
        _ = hub.publish(topic: "downloads", type: type, data: .object(data))
    }

    /// `OfflineProgress` of a product over all its files (`ProductFileStore.statusFields`:
    /// `progress`, `bytesOnDisk`, `sizeBytes`, `sizeKnown`, `files`, `segments`), the same
    /// figures `offline.status` gives.
    func offlineProgress(_ product: ProductRef, totals: [String: JSONValue]) {
        var data = totals
        data["token"] = .string(product.token)
        data["productId"] = .string(product.productId)
        data.removeValue(forKey: "images")
        downloads("OfflineProgress", data)
    }

    /// The content catalog: `SourcesChanged`, `CategoriesChanged`, `ItemsChanged`, `ItemStateChanged`.
    func catalog(_ type: String, _ data: [String: JSONValue]) {
        _ = hub.publish(topic: "catalog", type: type, data: .object(data))
    }

    func network(_ type: String, _ data: [String: JSONValue]) {
        _ = hub.publish(topic: "network", type: type, data: .object(data))
    }
}
