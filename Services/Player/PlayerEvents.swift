import Wire

/// Publishes the player's events (`PlayerEvent`) on the service's hub.
struct PlayerEvents: Sendable {
    let hub: EventHub

    func publish(_ event: PlayerEvent) {
        _ = hub.publish(topic: event.topic, type: event.type, data: event.data)
    }
}
