import Wire

/// Publishes the reporter's events (`ReporterEvent`) on the service's hub.
struct ReporterEvents: Sendable {
    let hub: EventHub

    func publish(_ event: ReporterEvent) {
        hub.publish(topic: event.topic, type: event.type, data: .object(event.data))
    }
}
