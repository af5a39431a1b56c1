import GRDB

extension StateDB {
    /// Schema changes owned by the reporter: the reporter's outbox bookkeeping. Registered in `StateDB.migrator`.
    ///
    /// - `playlogOutbox_state` on `state` alone: SQLite appends the rowid to every index entry, so
    ///   "pending, in insertion order" (`WHERE state = 'pending' ORDER BY rowid`) is read straight
    ///   off this index. Insertion order, not `createdAt`, is what "oldest first" means: the
    ///   device clock can jump backwards, the rowid cannot.
    /// - `playlogAttempts`: the last delivery attempts and how each ended, so `playlog.status`
    ///   still shows the last attempt after a restart or a crash. Trimmed to the newest 100 rows.
    static func reporterSchemaV2(_ db: Database) throws {
        try db.create(index: "playlogOutbox_state", on: "playlogOutbox", columns: ["state"])
        try db.create(table: "playlogAttempts") { t in
            t.autoIncrementedPrimaryKey("id")
            t.column("startedAt", .datetime).notNull()
            t.column("endedAt", .datetime).notNull()
            t.column("records", .integer).notNull() // records sent in this attempt
            t.column("accepted", .integer).notNull().defaults(to: 0)
            t.column("rejected", .integer).notNull().defaults(to: 0)
            t.column("result", .text).notNull().check { ["delivered", "failed"].contains($0) }
            t.column("error", .text) // JSON {name, message, status?} when failed
        }
    }

    /// - `playlogVerdicts`: the origin's answers to delivery requests whose records are not yet
    ///   marked in `playlogOutbox`. The delivery loop notes an answer here (one small row) before
    ///   it sends the next request, and marks the records (hundreds of rows) while that request is
    ///   out, deleting the note in the same transaction. A note left by a crash is applied when
    ///   the outbox opens, so a kill never makes more than the request in flight go again.
    /// - `playlogOutbox_pending` is dropped: no query uses it (they read `playlogOutbox_state`),
    ///   and every record stored or delivered paid for keeping it.
    static func reporterSchemaV7(_ db: Database) throws {
        try db.create(table: "playlogVerdicts") { t in
            t.column("id", .integer).primaryKey()
            // JSON {"accepted": [id…], "rejected": [{"id", "reason"}…], "unanswered": [id…]}
            t.column("verdict", .text).notNull()
        }
        try db.drop(index: "playlogOutbox_pending")
    }

    /// `playlogOutbox.kind` also takes `metric` (TIDAL Streaming Metrics and Progress events, posted
    /// to `/v1/metrics`). SQLite cannot change a CHECK in place, so the table is rebuilt with the
    /// same columns and rows (rowids kept: they are the delivery order) and its index made again.
    static func reporterSchemaV8(_ db: Database) throws {
        try db.create(table: "playlogOutbox_v8") { t in
            t.primaryKey("recordId", .text) // eventId or recordId (UUID)
            t.column("kind", .text).notNull().check { ["play", "consumption", "metric"].contains($0) }
            t.column("body", .text).notNull() // the JSON sent to the origin
            t.column("sizeBytes", .integer).notNull()
            t.column("state", .text).notNull().defaults(to: "pending")
                .check { ["pending", "delivered", "rejected"].contains($0) }
            t.column("attempts", .integer).notNull().defaults(to: 0)
            t.column("reason", .text)
            t.column("createdAt", .datetime).notNull()
            t.column("deliveredAt", .datetime)
        }
        try db.execute(
            sql: """
                INSERT INTO playlogOutbox_v8 (rowid, recordId, kind, body, sizeBytes, state, attempts, reason, createdAt, deliveredAt)
                SELECT rowid, recordId, kind, body, sizeBytes, state, attempts, reason, createdAt, deliveredAt FROM playlogOutbox
                """)
        try db.drop(table: "playlogOutbox")
        try db.rename(table: "playlogOutbox_v8", to: "playlogOutbox")
        try db.create(index: "playlogOutbox_state", on: "playlogOutbox", columns: ["state"])
    }
}
