import Foundation
import GRDB
import NIOConcurrencyHelpers
import StateDB
import Wire

/// The outbox table (`playlogOutbox`) and its counters. Every write goes through the
/// catalog's single writer, in its own transaction. A stored record is committed with
/// synchronous=FULL before the caller hears back: what this type says is stored survives
/// kill -9 and power loss. Delivery bookkeeping (`note`, `apply`) survives kill -9; see `killSafe`.
///
/// Delivered records keep their row with an empty body: the id stays known, so a record
/// sent again by a client is still answered `duplicate` and never queued twice.
final class OutboxStore: Sendable {
    let catalog: StateDB
    let maxQueueBytes: Int
    private let counters: NIOLockedValueBox<OutboxCounters>

    /// Attempts kept in `playlogAttempts`.
    static let attemptsKept = 100

    private init(catalog: StateDB, maxQueueBytes: Int, counters: OutboxCounters) {
        self.catalog = catalog
        self.maxQueueBytes = maxQueueBytes
        self.counters = NIOLockedValueBox(counters)
    }

    /// The store with its counters loaded from the table.
    /// Answers noted but not yet applied when the process ended are applied first.
    static func open(catalog: StateDB, maxQueueBytes: Int) async throws -> OutboxStore {
        _ = try await catalog.writeWithoutTransaction { db in try Self.applyLeftNotes(db) }
        let loaded = try await catalog.read { db in try Self.loadCounters(db) }
        return OutboxStore(catalog: catalog, maxQueueBytes: maxQueueBytes, counters: loaded)
    }

    var snapshot: OutboxCounters { counters.withLockedValue { $0 } }

    private static func loadCounters(_ db: Database) throws -> OutboxCounters {
        var counts = OutboxCounters()
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT kind, state, COUNT(*) AS n, COALESCE(SUM(sizeBytes), 0) AS bytes
                FROM playlogOutbox GROUP BY kind, state
                """)
        for row in rows {
            guard let kind = RecordKind(rawValue: row["kind"]) else { continue }
            let n: Int = row["n"]
            switch row["state"] as String {
            case "pending":
                counts[kind].pending += n
                counts.pendingBytes += row["bytes"] as Int
            case "delivered": counts[kind].delivered += n
            case "rejected": counts[kind].rejected += n
            default: break
            }
        }
        return counts
    }

    // MARK: Recording

    /// Stores a group of records in one transaction (group commit) and says, per record,
    /// whether it was stored, already known, or refused at the cap.
    func insert(_ records: [OutboxRecord], at now: Date) async throws -> [StoreOutcome] {
        try await catalog.writeWithoutTransaction { db in try self.insert(records, at: now, db: db) }
    }

    /// `insert`, blocking the calling thread until the transaction is durable: for the group
    /// committer's own thread only (never a Swift task; the catalog asserts it in debug builds).
    func insertBlocking(_ records: [OutboxRecord], at now: Date) throws -> [StoreOutcome] {
        try catalog.writeWithoutTransactionBlocking { db in try self.insert(records, at: now, db: db) }
    }

    private func insert(_ records: [OutboxRecord], at date: Date, db: Database) throws -> [StoreOutcome] {
        // One date text for the whole batch: made per record, it cost more than the rest of an insert.
        let now = date.databaseText
        var delta = OutboxCounters()
        var outcomes: [StoreOutcome] = []
        try db.inTransaction(.immediate) {
            delta = OutboxCounters()
            outcomes = []
            var queued = self.snapshot.pendingBytes
            let insert = try db.cachedStatement(
                sql: """
                    INSERT OR IGNORE INTO playlogOutbox (recordId, kind, body, sizeBytes, state, attempts, createdAt)
                    VALUES (?, ?, ?, ?, 'pending', 0, ?)
                    """)
            let consumed = try db.cachedStatement(
                sql: """
                    INSERT INTO consumedProducts (productId, firstAt, lastAt, records) VALUES (?, ?, ?, 1)
                    ON CONFLICT(productId) DO UPDATE SET lastAt = excluded.lastAt, records = records + 1
                    """)
            for record in records {
                let size = record.sizeBytes
                if queued + size > self.maxQueueBytes {
                    let exists = try db.cachedStatement(sql: "SELECT 1 FROM playlogOutbox WHERE recordId = ?")
                    let known = try Bool.fetchOne(exists, arguments: [record.id]) ?? false
                    outcomes.append(known ? .duplicate : .queueFull(queuedBytes: queued))
                    continue
                }
                try insert.execute(arguments: [record.id, record.kind.rawValue, record.body, size, now])
                if db.changesCount == 1 {
                    if let productId = record.consumedProductId {
                        try consumed.execute(arguments: [productId, now, now])
                    }
                    outcomes.append(.stored)
                    queued += size
                    delta[record.kind].pending += 1
                    delta.pendingBytes += size
                } else {
                    outcomes.append(.duplicate)
                }
            }
            return .commit
        }
        self.add(delta)
        return outcomes
    }

    // MARK: Delivering

    /// The oldest pending records, in the order they were recorded.
    func nextBatch(limit: Int) async throws -> [PendingRecord] {
        try await nextBatch(after: 0, limit: limit)
    }

    /// The oldest pending records recorded after the one at `rowid` (a delivery run reads on
    /// from its last batch while that batch's records are still pending).
    func nextBatch(after rowid: Int64, limit: Int) async throws -> [PendingRecord] {
        try await catalog.read { db in
            let select = try db.cachedStatement(
                sql: """
                    SELECT rowid, recordId, kind, body FROM playlogOutbox INDEXED BY playlogOutbox_state
                    WHERE state = 'pending' AND rowid > ? ORDER BY rowid LIMIT ?
                    """)
            var batch: [PendingRecord] = []
            batch.reserveCapacity(limit)
            let rows = try Row.fetchCursor(select, arguments: [rowid, limit])
            while let row = try rows.next() {
                guard let kind = RecordKind(rawValue: row[2]) else { continue }
                batch.append(PendingRecord(id: row[1], kind: kind, body: row[3], rowid: row[0]))
            }
            return batch
        }
    }

    /// Commits what the origin said about `sent`: accepted → delivered (body dropped),
    /// rejected → set aside with the reason, never sent again; the rest stays pending.
    /// Returns the records that actually changed state (a record already decided is left alone).
    func apply(_ verdict: BatchVerdict, sent: [PendingRecord], attempt: DeliveryAttempt) async throws -> (delivered: Int, rejected: [BatchVerdict.Rejection]) {
        try await catalog.writeWithoutTransaction { db in
            try Self.killSafe(db) {
                var applied: Applied!
                try db.inTransaction(.immediate) {
                    applied = try Self.mark(verdict, sent: sent, at: attempt.endedAt, db)
                    try Self.log(attempt, db)
                    return .commit
                }
                self.add(applied.delta)
                return (applied.delivered, applied.rejected)
            }
        }
    }

    /// Notes the origin's answer in `playlogVerdicts` and logs the attempt, in one small
    /// transaction, before the records it names are marked (`apply(noted:…)`): once this
    /// returns, a kill no longer makes those records go again, because opening the outbox
    /// applies a note left behind. Returns the note's id.
    func note(_ verdict: BatchVerdict, attempt: DeliveryAttempt) async throws -> Int64 {
        let text = String(decoding: Self.json(verdict, at: attempt.endedAt).serialized(), as: UTF8.self)
        return try await catalog.writeWithoutTransaction { db in
            try Self.killSafe(db) {
                var id: Int64 = 0
                try db.inTransaction(.immediate) {
                    try db.execute(sql: "INSERT INTO playlogVerdicts (verdict) VALUES (?)", arguments: [text])
                    id = db.lastInsertedRowID
                    try Self.log(attempt, db)
                    return .commit
                }
                return id
            }
        }
    }

    /// Marks the records of a noted answer (as `apply` does) and deletes the note, in one transaction.
    func apply(noted note: Int64, _ verdict: BatchVerdict, sent: [PendingRecord], at date: Date) async throws -> (
        delivered: Int, rejected: [BatchVerdict.Rejection]
    ) {
        try await catalog.writeWithoutTransaction { db in
            try Self.killSafe(db) {
                var applied: Applied!
                try db.inTransaction(.immediate) {
                    applied = try Self.mark(verdict, sent: sent, at: date, db)
                    try db.execute(sql: "DELETE FROM playlogVerdicts WHERE id = ?", arguments: [note])
                    return .commit
                }
                self.add(applied.delta)
                return (applied.delivered, applied.rejected)
            }
        }
    }

    /// Applies the notes a crash left behind (before the counters are loaded); returns how many.
    private static func applyLeftNotes(_ db: Database) throws -> Int {
        let notes = try Row.fetchAll(db, sql: "SELECT id, verdict FROM playlogVerdicts ORDER BY id")
        guard !notes.isEmpty else { return 0 }
        try db.inTransaction(.immediate) {
            for note in notes {
                let text: String = note["verdict"]
                if let value = try? JSONValue.parse(Array(text.utf8)) {
                    let (verdict, date) = Self.verdict(from: value)
                    _ = try mark(verdict, sent: nil, at: date, db)
                }
                try db.execute(sql: "DELETE FROM playlogVerdicts WHERE id = ?", arguments: [note["id"] as Int64])
            }
            return .commit
        }
        return notes.count
    }

    /// What marking a verdict changed.
    private struct Applied {
        var delta = OutboxCounters()
        var delivered = 0
        var rejected: [BatchVerdict.Rejection] = []
    }

    /// The marks of one verdict, inside the caller's transaction. `sent` gives each record's
    /// kind and size for the counters; nil (a note applied at opening) counts nothing, since
    /// the counters are loaded from the table afterwards.
    private static func mark(_ verdict: BatchVerdict, sent: [PendingRecord]?, at when: Date, _ db: Database) throws -> Applied {
        let date = when.databaseText
        let byID = sent.map { Dictionary($0.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first }) }
        var applied = Applied()
        let deliver = try db.cachedStatement(
            sql: """
                UPDATE playlogOutbox SET state = 'delivered', body = '', deliveredAt = ?, attempts = attempts + 1
                WHERE recordId = ? AND state = 'pending'
                """)
        for id in verdict.accepted {
            let record = byID?[id]
            if byID != nil && record == nil { continue }
            try deliver.execute(arguments: [date, id])
            if db.changesCount == 1, let record {
                applied.delivered += 1
                applied.delta[record.kind].pending -= 1
                applied.delta[record.kind].delivered += 1
                applied.delta.pendingBytes -= record.sizeBytes
            }
        }
        let reject = try db.cachedStatement(
            sql: """
                UPDATE playlogOutbox SET state = 'rejected', reason = ?, attempts = attempts + 1
                WHERE recordId = ? AND state = 'pending'
                """)
        for rejection in verdict.rejected {
            let record = byID?[rejection.id]
            if byID != nil && record == nil { continue }
            try reject.execute(arguments: [rejection.reason, rejection.id])
            if db.changesCount == 1, let record {
                applied.rejected.append(rejection)
                applied.delta[record.kind].pending -= 1
                applied.delta[record.kind].rejected += 1
                applied.delta.pendingBytes -= record.sizeBytes
            }
        }
        try countAttempt(db, ids: verdict.unanswered)
        return applied
    }

    /// Delivery bookkeeping commits with synchronous=NORMAL: in WAL mode a commit then survives
    /// the process being killed (it is in the log file) but not a power cut, and losing one only
    /// makes the origin get those records again, which it deduplicates by id. It saves an fsync
    /// per request on the delivery's critical path. Records themselves are stored with FULL
    /// (`insert`), and the next such commit also syncs whatever was logged before it.
    private static func killSafe<T>(_ db: Database, _ body: () throws -> T) throws -> T {
        try db.execute(sql: "PRAGMA synchronous = NORMAL")
        let result: T
        do {
            result = try body()
        } catch {
            try? db.execute(sql: "PRAGMA synchronous = FULL")
            throw error
        }
        try db.execute(sql: "PRAGMA synchronous = FULL")
        return result
    }

    private static func json(_ verdict: BatchVerdict, at date: Date) -> JSONValue {
        [
            "accepted": .array(verdict.accepted.map(JSONValue.string)),
            "rejected": .array(verdict.rejected.map { ["id": .string($0.id), "reason": .string($0.reason)] }),
            "unanswered": .array(verdict.unanswered.map(JSONValue.string)),
            "at": .number(date.timeIntervalSince1970),
        ]
    }

    private static func verdict(from value: JSONValue) -> (BatchVerdict, Date) {
        var verdict = BatchVerdict()
        verdict.accepted = value["accepted"]?.arrayValue?.compactMap(\.stringValue) ?? []
        verdict.rejected =
            value["rejected"]?.arrayValue?.compactMap { entry in
                entry["id"]?.stringValue.map { BatchVerdict.Rejection(id: $0, reason: entry["reason"]?.stringValue ?? "") }
            } ?? []
        verdict.unanswered = value["unanswered"]?.arrayValue?.compactMap(\.stringValue) ?? []
        return (verdict, Date(timeIntervalSince1970: value["at"]?.doubleValue ?? Date().timeIntervalSince1970))
    }

    /// Notes a failed attempt: the records stay pending, their attempt count grows.
    func recordFailure(sent: [PendingRecord], attempt: DeliveryAttempt) async throws {
        try await catalog.write { db in
            try Self.countAttempt(db, ids: sent.map(\.id))
            try Self.log(attempt, db)
        }
    }

    private static func countAttempt(_ db: Database, ids: [String]) throws {
        let bump = try db.cachedStatement(sql: "UPDATE playlogOutbox SET attempts = attempts + 1 WHERE recordId = ? AND state = 'pending'")
        for id in ids { try bump.execute(arguments: [id]) }
    }

    private static func log(_ attempt: DeliveryAttempt, _ db: Database) throws {
        let error = attempt.error.map { String(decoding: $0.serialized(), as: UTF8.self) }
        try db.execute(
            sql: """
                INSERT INTO playlogAttempts (startedAt, endedAt, records, accepted, rejected, result, error)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                attempt.startedAt.databaseText, attempt.endedAt.databaseText, attempt.records, attempt.accepted, attempt.rejected,
                attempt.result.rawValue, error,
            ])
        try db.execute(sql: "DELETE FROM playlogAttempts WHERE id <= ?", arguments: [db.lastInsertedRowID - Int64(attemptsKept)])
    }

    private func add(_ delta: OutboxCounters) {
        counters.withLockedValue { counts in
            for (kind, d) in delta.byKind {
                counts[kind].pending += d.pending
                counts[kind].delivered += d.delivered
                counts[kind].rejected += d.rejected
            }
            counts.pendingBytes += delta.pendingBytes
        }
    }

    // MARK: Status

    /// When the oldest pending record was stored (device clock), nil when none is pending.
    func oldestPendingAt() async throws -> Date? {
        try await catalog.read { db in
            try Row.fetchOne(
                db,
                sql: """
                    SELECT createdAt FROM playlogOutbox INDEXED BY playlogOutbox_state
                    WHERE state = 'pending' ORDER BY rowid LIMIT 1
                    """)?.date("createdAt")
        }
    }

    func lastAttempt() async throws -> DeliveryAttempt? {
        try await catalog.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM playlogAttempts ORDER BY id DESC LIMIT 1") else { return nil }
            let error = (row["error"] as String?).flatMap { try? JSONValue.parse(Array($0.utf8)) }
            return DeliveryAttempt(
                startedAt: row.date("startedAt") ?? .distantPast, endedAt: row.date("endedAt") ?? .distantPast,
                records: row["records"],
                accepted: row["accepted"], rejected: row["rejected"],
                result: DeliveryAttempt.Result(rawValue: row["result"]) ?? .failed, error: error)
        }
    }

    /// The most recently set-aside records, newest first: what status shows of the rejected.
    func recentRejections(limit: Int) async throws -> [JSONValue] {
        try await catalog.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT recordId, kind, reason FROM playlogOutbox INDEXED BY playlogOutbox_state
                    WHERE state = 'rejected' ORDER BY rowid DESC LIMIT ?
                    """, arguments: [limit]
            ).map { row in
                ["id": .string(row["recordId"]), "kind": .string(row["kind"]), "reason": .string(row["reason"] ?? "")]
            }
        }
    }
}
