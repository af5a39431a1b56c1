import GRDB

extension StateDB {
    /// Schema changes owned by the player: the player's persisted config and its durable hand-over queue of play events. Registered in `StateDB.migrator`.
    ///
    /// The config lives in the shared `settings` table under the key `player.config` (no table of
    /// its own). Play events go to `playerPlays` first and only then to the reporter, so that a
    /// crash, a kill -9 or a reporter that is down never loses one.
    static func playerSchemaV2(_ db: Database) throws {
        try db.create(table: "playerPlays") { t in
            t.primaryKey("eventId", .text) // UUID; the reporter and origin dedupe on it
            // 'open': the play is going on and `body` holds its progress so far (rewritten every few
            // seconds); 'ready': closed, waiting to be handed to the reporter. Deleted once the
            // reporter answered success.
            t.column("state", .text).notNull().check { ["open", "ready"].contains($0) }
            t.column("body", .text).notNull() // the play event as JSON
            t.column("attempts", .integer).notNull().defaults(to: 0)
            t.column("lastError", .text)
            t.column("createdAt", .datetime).notNull()
            t.column("updatedAt", .datetime).notNull()
        }
        try db.create(index: "playerPlays_state", on: "playerPlays", columns: ["state", "createdAt"])
    }

    /// `playerPlays.kind`: the table also carries the player's TIDAL Streaming Metrics and Progress
    /// events (`metric`, handed over with `metrics.record`), in one order with its play events
    /// (`play`, `playlog.record`). A metric event is written closed (`ready`).
    static func playerSchemaV8(_ db: Database) throws {
        try db.alter(table: "playerPlays") { t in
            t.add(column: "kind", .text).notNull().defaults(to: "play").check { ["play", "metric"].contains($0) }
        }
    }
}
