import Logging
import Systemd
import Wire

/// What delivery tells the world: the journal lines, the `reporter` events, and the count of
/// records delivered by this process.
struct DeliveryReport: Sendable {
    let outbox: Outbox
    let events: ReporterEvents
    let logger: Logger
    /// Records delivered by this process: `cassette_plays_delivered_total` adds earlier runs.
    let deliveredCount = DeliveredCount()

    /// Logs and publishes what a committed verdict changed; `counts` are the outbox's after it.
    func committed(_ applied: (delivered: Int, rejected: [BatchVerdict.Rejection]), kind: RecordKind, counts: OutboxCounters) {
        if applied.delivered > 0 {
            deliveredCount.add(applied.delivered)
            logger.info(
                "delivered to the origin",
                metadata: LogMessageID.playsDelivered.metadata(
                    ["kind": "\(kind.rawValue)", "count": "\(applied.delivered)", "pending": "\(counts.pending)"]))
            events.publish(.delivered(kind, count: applied.delivered, pending: counts.pending))
        }
        if !applied.rejected.isEmpty {
            logger.warning(
                "origin rejected records; they are set aside and not sent again",
                metadata: ["count": "\(applied.rejected.count)", "first": "\(applied.rejected[0].id): \(applied.rejected[0].reason)"])
            events.publish(.rejected(kind, applied.rejected))
        }
        if outbox.noteFreed(pendingBytes: counts.pendingBytes) {
            events.publish(.queueAvailable(queuedBytes: counts.pendingBytes, maxQueueBytes: outbox.maxQueueBytes))
        }
    }

    /// Logs and publishes a failed attempt and when the next one goes.
    func failed(error: JSONValue, failures: Int, retryInSeconds delay: Double, pending: Int) {
        logger.warning(
            "delivery failed; retrying later (the reporter never gives up on a record)",
            metadata: LogMessageID.deliveryFailing.metadata(
                [
                    "error": "\(error["name"]?.stringValue ?? "?")", "attempt": "\(failures)",
                    "retryInSeconds": "\(delay)", "pending": "\(pending)",
                ]))
        events.publish(.deliveryFailed(error: error, consecutiveFailures: failures, retryInSeconds: delay, pending: pending))
    }
}
