import Wire

/// The reporter's `STATUS=` line (see ServiceKit's `StatusLine`): "delivering 120 plays",
/// "idle, 0 queued", "waiting to retry, 120 queued" or "no origin, 5 queued". Every pending
/// play-log record counts as a play.
enum ReporterStatusLine {
    static func text(engine: DeliveryEngine, outbox: Outbox) async -> String {
        guard let queued = try? await outbox.store().snapshot.pending else {
            return "not running: the outbox is unavailable"
        }
        switch await engine.status()["state"]?.stringValue {
        case "delivering"?: return "delivering \(queued) play\(queued == 1 ? "" : "s")"
        case "waitingToRetry"?: return "waiting to retry, \(queued) queued"
        case "noOrigin"?: return "no origin, \(queued) queued"
        default: return "idle, \(queued) queued"
        }
    }
}
