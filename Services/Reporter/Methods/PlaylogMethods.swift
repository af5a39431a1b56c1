import Foundation
import OriginClient
import Wire

/// `playlog.record`, `consumption.record`, `metrics.record`, `playlog.status`, `playlog.flush` (docs/protocol.md).
struct PlaylogMethods: Sendable {
    let outbox: Outbox
    let engine: DeliveryEngine
    let events: ReporterEvents

    func register(on router: inout RPCRouter) {
        router.register("playlog.record", takes: ["event"]) { ctx in
            let record = try RecordValidator.playEvent(params: ctx.request.params)
            return try await store(record)
        }
        router.register("consumption.record") { ctx in
            let record = try RecordValidator.consumption(params: ctx.request.params)
            return try await store(record)
        }
        router.register("metrics.record", takes: ["event"]) { ctx in
            let record = try RecordValidator.metric(params: ctx.request.params)
            return try await store(record)
        }
        router.register("playlog.status", takes: []) { _ in
            .object(try await status())
        }
        router.register("playlog.flush", takes: []) { _ in
            guard await engine.hasOrigin else {
                throw ReporterError(
                    kind: .noOrigin,
                    message: "No origin is configured, so there is nowhere to deliver to; records are kept. Set --origin or the config's origin.")
            }
            // Answers within the interactive deadline whatever the origin does: an attempt still
            // at the origin then goes on in the background (docs/protocol.md, playlog.flush).
            let outcome = await engine.flush(within: RetryPolicy.interactive.deadlineSeconds ?? 8)
            var result = try await status()
            result["attempted"] = .bool(outcome != .ended(nil))
            result["inProgress"] = .bool(outcome == .stillDelivering)
            return .object(result)
        }
    }

    /// Answers only after the record is durable (or known already, or refused at the cap).
    private func store(_ record: OutboxRecord) async throws -> JSONValue {
        let outcome = try await outbox.record(record)
        if case .queueFull(let queued) = outcome {
            if outbox.noteRefused() { events.publish(.queueFull(queuedBytes: queued, maxQueueBytes: outbox.maxQueueBytes)) }
            throw ReporterError.queueFull(queuedBytes: queued, recordBytes: record.sizeBytes, maxQueueBytes: outbox.maxQueueBytes)
        }
        // The committer rang the delivery loop's bell after the commit that stored it.
        let pending = try await outbox.store().snapshot.pending
        return [record.kind.idKey: .string(record.id), "duplicate": .bool(outcome == .duplicate), "pending": .int(pending)]
    }

    private func status() async throws -> [String: JSONValue] {
        let store = try await outbox.store()
        let counts = store.snapshot
        let oldest = try await store.oldestPendingAt()
        var fields: [String: JSONValue] = [
            "pending": .int(counts.pending), "delivered": .int(counts.delivered), "rejected": .int(counts.rejected),
            "pendingBytes": .int(counts.pendingBytes), "maxQueueBytes": .int(outbox.maxQueueBytes),
            "queueFull": .bool(outbox.isFull),
            "oldestPendingAt": oldest.map { .string(UTCTimestamp.rfc3339($0)) } ?? .null,
            "oldestPendingAgeSeconds": oldest.map { .number((max(0, Date().timeIntervalSince($0)) * 1000).rounded() / 1000) } ?? .null,
            "plays": Self.json(counts[.play]), "consumption": Self.json(counts[.consumption]),
            "metrics": Self.json(counts[.metric]),
            "recentRejections": .array(try await store.recentRejections(limit: 20)),
        ]
        let delivery = await engine.status()
        fields["lastAttempt"] = delivery["lastAttempt"] ?? .null
        fields["delivery"] = .object(delivery.filter { $0.key != "lastAttempt" })
        return fields
    }

    private static func json(_ counts: OutboxCounters.PerKind) -> JSONValue {
        ["pending": .int(counts.pending), "delivered": .int(counts.delivered), "rejected": .int(counts.rejected)]
    }
}
