import Wire

/// One record the player hands to the reporter, kept in the order the engine made it: a play
/// event (TIDAL PlayLog, `playlog.record`) or a Streaming Metrics or Progress event
/// (`metrics.record`). Both go through the same durable path (`playerPlays`, `PlayLogWriter`,
/// `PlayLogSender`), so neither kind can be lost or overtake the other.
struct ReportRecord: Sendable, Equatable {
    enum Kind: String, Sendable {
        case play
        case metric

        /// The reporter's method that takes this kind.
        var method: String { self == .play ? "playlog.record" : "metrics.record" }
    }

    var kind: Kind
    var eventId: String
    /// Exactly what the reporter gets as `event`.
    var json: JSONValue

    static func play(_ event: PlayEvent) -> ReportRecord {
        ReportRecord(kind: .play, eventId: event.eventId, json: event.json)
    }

    static func metric(_ event: MetricEvent) -> ReportRecord {
        ReportRecord(kind: .metric, eventId: event.eventId, json: event.json)
    }
}
