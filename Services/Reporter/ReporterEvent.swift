import Wire

/// Every event the reporter publishes, each case with its data (docs/protocol.md, reporter
/// section). `topic`, `type` and `data` are the one place they are put on the wire.
enum ReporterEvent: Sendable {
    /// `PlaysDelivered`, `ConsumptionDelivered`, `MetricsDelivered`: the origin accepted records.
    case delivered(RecordKind, count: Int, pending: Int)
    /// `PlaysRejected`, `ConsumptionRejected`, `MetricsRejected`: set aside, never sent again.
    case rejected(RecordKind, [BatchVerdict.Rejection])
    case deliveryFailed(error: JSONValue, consecutiveFailures: Int, retryInSeconds: Double, pending: Int)
    case queueFull(queuedBytes: Int, maxQueueBytes: Int)
    case queueAvailable(queuedBytes: Int, maxQueueBytes: Int)

    var topic: String { "reporter" }

    var type: String {
        switch self {
        case .delivered(let kind, _, _): kind.eventStem + "Delivered"
        case .rejected(let kind, _): kind.eventStem + "Rejected"
        case .deliveryFailed: "DeliveryFailed"
        case .queueFull: "QueueFull"
        case .queueAvailable: "QueueAvailable"
        }
    }

    var data: [String: JSONValue] {
        switch self {
        case .delivered(_, let count, let pending):
            return ["count": .int(count), "pending": .int(pending)]
        case .rejected(let kind, let rejections):
            return [
                kind.idKey + "s": .array(rejections.map { .string($0.id) }),
                "reasons": .array(rejections.map { .string($0.reason) }),
            ]
        case .deliveryFailed(let error, let failures, let retryInSeconds, let pending):
            return [
                "error": error, "consecutiveFailures": .int(failures),
                "retryInSeconds": .number(retryInSeconds), "pending": .int(pending),
            ]
        case .queueFull(let queuedBytes, let maxQueueBytes), .queueAvailable(let queuedBytes, let maxQueueBytes):
            return ["queuedBytes": .int(queuedBytes), "maxQueueBytes": .int(maxQueueBytes)]
        }
    }
}
