import Wire

/// The events the reporter publishes on topic `reporter` (docs/protocol.md).
struct ReporterEvents: Sendable {
    static let topic = "reporter"
    let hub: EventHub

    func delivered(kind: RecordKind, count: Int, pending: Int) {
        hub.publish(
            topic: Self.topic, type: kind.eventStem + "Delivered",
            data: ["count": .int(count), "pending": .int(pending)])
    }

    func rejected(kind: RecordKind, _ rejections: [BatchVerdict.Rejection]) {
        hub.publish(
            topic: Self.topic, type: kind.eventStem + "Rejected",
            data: [
                kind.idKey + "s": .array(rejections.map { .string($0.id) }),
                "reasons": .array(rejections.map { .string($0.reason) }),
            ])
    }

    func deliveryFailed(error: JSONValue, failures: Int, retryInSeconds: Double, pending: Int) {
        hub.publish(
            topic: Self.topic, type: "DeliveryFailed",
            data: [
                "error": error, "consecutiveFailures": .int(failures),
                "retryInSeconds": .number(retryInSeconds), "pending": .int(pending),
            ])
    }

    func queueFull(queuedBytes: Int, maxQueueBytes: Int) {
        hub.publish(
            topic: Self.topic, type: "QueueFull",
            data: ["queuedBytes": .int(queuedBytes), "maxQueueBytes": .int(maxQueueBytes)])
    }

    func queueAvailable(queuedBytes: Int, maxQueueBytes: Int) {
        hub.publish(
            topic: Self.topic, type: "QueueAvailable",
            data: ["queuedBytes": .int(queuedBytes), "maxQueueBytes": .int(maxQueueBytes)])
    }
}
