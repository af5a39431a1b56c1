import GRDB

extension Catalog {
    /// Schema changes owned by the reporter: the reporter's outbox bookkeeping. Registered in `Catalog.migrator`.
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
            t.column("records", .integer).notNull()            // records sent in this attempt
            t.column("accepted", .integer).notNull().defaults(to: 0)
            t.column("rejected", .integer).notNull().defaults(to: 0)
            t.column("result", .text).notNull().check { ["delivered", "failed"].contains($0) }
            t.column("error", .text)                           // JSON {name, message, status?} when failed
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
}
