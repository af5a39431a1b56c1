import ServiceKit

/// The reporter's part of the health gate (its queue moves) and of its metrics
/// (docs/protocol.md, "service.metrics").
enum ReporterFleet {
    static func problems(_ engine: DeliveryEngine, _ outbox: Outbox) -> @Sendable () async -> [String] {
        {
            guard let store = outbox.openedStore else { return [] } // the catalog check says why
            return await engine.healthProblem(pending: store.snapshot.pending).map { [$0] } ?? []
        }
    }

    static func metrics(_ outbox: Outbox) -> @Sendable () async -> [MetricFamily] {
        {
            guard let store = outbox.openedStore else { return [] }
            let counts = store.snapshot
            return [
                .gauge(
                    "cassette_plays_pending", help: "Records (plays, consumption records, streaming metric events) waiting for delivery to the origin.",
                    Double(counts.pending)),
                .gauge(
                    "cassette_plays_pending_bytes", help: "Bytes of the records waiting for delivery.", unit: "bytes",
                    Double(counts.pendingBytes)),
            ]
        }
    }

    static func totals(_ engine: DeliveryEngine) -> [MetricTotal] {
        let delivered = engine.deliveredCount
        return [
            MetricTotal("cassette_plays_delivered", help: "Records (plays, consumption records, streaming metric events) the origin accepted.") {
                Double(delivered.value)
            }
        ]
    }
}
