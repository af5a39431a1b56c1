import Wire

/// Publishes the downloader's events (`DownloaderEvent`) on the service's hub. An event naming
/// a token carries that token's `referenceId` back to the app when it gave one.
struct DownloaderEvents: Sendable {
    let hub: EventHub
    /// The `referenceId` each token's events carry back to the app.
    let references = ReferenceLoopback()

    func publish(_ event: DownloaderEvent) {
        var data = event.data
        if data["referenceId"] == nil, let token = data["token"]?.stringValue, let referenceId = references.referenceId(token: token) {
            data["referenceId"] = .string(referenceId)
        }
        _ = hub.publish(topic: event.topic, type: event.type, data: .object(data))
    }
}
