import Foundation
import GRDB
import StateDB
import Synchronization
import Wire

/// The player's durable side of the play log: `playerPlays` in the catalog. A play event is
/// written here when its play starts (state `open`), rewritten as it goes on (its `endedAt` and
/// `endPosition` so far, so that after a kill -9 it closes where playback had got to), closed
/// when it ends (`ready`), and deleted only after the reporter has confirmed it, so none is lost
/// to a crash or a reporter that is down. Metric events (`kind` `metric`) are written `ready`.
struct PlayLogStore: Sendable {
    let catalog: StateDB

    /// Applies backlog entries in order, in one transaction: each event's row written, or (the
    /// reporter has it) deleted.
    ///
    /// Progress saves of plays already in the table (every `playProgressSeconds`) commit with
    /// synchronous=NORMAL, unless the last FULL commit here is `durableEvery` old: in WAL mode
    /// such a commit survives a kill -9, which is what the saves are for, and a power cut loses
    /// at most `durableEvery` of a play's end. It costs no fsync, so the kernel writes the log's
    /// pages once per writeback instead of at every save (docs/benchmarks.md, "flash"). A batch
    /// that opens, closes or forgets a play commits with FULL, which also syncs what was logged
    /// before it.
    func apply(_ entries: [PlayBacklog.Entry]) async throws {
        let now = Date().databaseText
        let rows = entries.map { entry -> (PlayBacklog.Entry, String?) in
            guard case .save(let record, _) = entry.change else { return (entry, nil) }
            return (entry, String(decoding: JSONCoding.data(record.json), as: UTF8.self))
        }
        let savesOnly = entries.allSatisfy { entry in
            if case .save(_, false) = entry.change { return true }
            return false
        }
        let ids = Array(Set(entries.map(\.eventId)))
        try await catalog.writeWithoutTransaction { db in
            var relaxed = savesOnly && Self.lastFull.withLock { $0.map { .now - $0 < Self.durableEvery } ?? false }
            if relaxed {
                let known = try Int.fetchOne(
                    db, sql: "SELECT count(*) FROM playerPlays WHERE eventId IN (\(ids.map { _ in "?" }.joined(separator: ", ")))",
                    arguments: StatementArguments(ids))
                relaxed = known == ids.count
            }
            if relaxed { try db.execute(sql: "PRAGMA synchronous = NORMAL") }
            defer { if relaxed { try? db.execute(sql: "PRAGMA synchronous = FULL") } }
            try db.inTransaction(.immediate) {
                for (entry, body) in rows {
                    switch entry.change {
                    case .save(let record, let closing):
                        try db.execute(
                            sql: """
                                INSERT INTO playerPlays (eventId, kind, state, body, createdAt, updatedAt) VALUES (?, ?, ?, ?, ?, ?)
                                ON CONFLICT(eventId) DO UPDATE SET state = excluded.state, body = excluded.body, updatedAt = excluded.updatedAt
                                """, arguments: [record.eventId, record.kind.rawValue, closing ? "ready" : "open", body, now, now])
                    case .forget:
                        try db.execute(sql: "DELETE FROM playerPlays WHERE eventId = ?", arguments: [entry.eventId])
                    }
                }
                return .commit
            }
            if !relaxed { Self.lastFull.withLock { $0 = .now } }
        }
    }

    /// The longest a play's progress goes without a FULL commit (what a power cut may lose).
    static let durableEvery = Duration.seconds(30)
    /// When this process last committed play rows with synchronous=FULL.
    private static let lastFull = Mutex<ContinuousClock.Instant?>(nil)

    /// Closes plays a previous run left open (it was killed): their last saved progress is the end.
    @discardableResult
    func closeLeftovers() async throws -> Int {
        try await catalog.write { db in
            try db.execute(sql: "UPDATE playerPlays SET state = 'ready' WHERE state = 'open'")
            return db.changesCount
        }
    }

    struct Pending: Sendable {
        var eventId: String
        var kind: ReportRecord.Kind
        /// Nil when the stored text is not JSON (it cannot be handed over).
        var body: JSONValue?
        var position: Position
    }

    /// Where a row stands in the hand-over order: its rowid, which an upsert keeps, so rows go in
    /// the order they were first written (timestamps of a burst of writes can tie).
    struct Position: Sendable {
        var rowid: Int64
    }

    /// Closed events waiting for the reporter, oldest first, after `position` when given.
    func pending(after position: Position? = nil, limit: Int) async throws -> [Pending] {
        try await catalog.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT rowid, eventId, kind, body FROM playerPlays WHERE state = 'ready' AND rowid > ? ORDER BY rowid LIMIT ?
                    """, arguments: [position?.rowid ?? 0, limit]
            ).map { row in
                let text: String = row["body"]
                let kind: String = row["kind"]
                return Pending(
                    eventId: row["eventId"], kind: ReportRecord.Kind(rawValue: kind) ?? .play,
                    body: try? JSONCoding.parse(Array(text.utf8)),
                    position: Position(rowid: row["rowid"]))
            }
        }
    }

    /// The reporter has the event durably: forget it.
    func delivered(_ eventId: String) async throws {
        try await catalog.write { db in
            try db.execute(sql: "DELETE FROM playerPlays WHERE eventId = ?", arguments: [eventId])
        }
    }

    func failed(_ eventId: String, reason: String) async throws {
        try await catalog.write { db in
            try db.execute(
                sql: "UPDATE playerPlays SET attempts = attempts + 1, lastError = ? WHERE eventId = ?",
                arguments: [reason, eventId])
        }
    }

    struct Counts: Sendable {
        var open: Int
        var pending: Int
        var lastError: String?
    }

    func counts() async throws -> Counts {
        try await catalog.read { db in
            let open = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM playerPlays WHERE state = 'open'") ?? 0
            let pending = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM playerPlays WHERE state = 'ready'") ?? 0
            let lastError = try String.fetchOne(
                db,
                sql: """
                    SELECT lastError FROM playerPlays WHERE state = 'ready' AND lastError IS NOT NULL ORDER BY updatedAt DESC LIMIT 1
                    """)
            return Counts(open: open, pending: pending, lastError: lastError)
        }
    }
}
