import Catalog
import Foundation
import GRDB
import NIOConcurrencyHelpers
import Wire

/// The outbox table (`playlogOutbox`) and its counters. Every write goes through the
/// catalog's single writer, in its own transaction, committed with synchronous=FULL before
/// the caller hears back: what this type says is stored survives kill -9 and power loss.
///
/// Delivered records keep their row with an empty body: the id stays known, so a record
/// sent again by a client is still answered `duplicate` and never queued twice.
final class OutboxStore: Sendable {
    let catalog: Catalog
    let maxQueueBytes: Int
    private let counters: NIOLockedValueBox<OutboxCounters>

    /// Attempts kept in `playlogAttempts`.
    static let attemptsKept = 100

    private init(catalog: Catalog, maxQueueBytes: Int, counters: OutboxCounters) {
        self.catalog = catalog
        self.maxQueueBytes = maxQueueBytes
        self.counters = NIOLockedValueBox(counters)
    }

    /// The store with its counters loaded from the table.
    static func open(catalog: Catalog, maxQueueBytes: Int) async throws -> OutboxStore {
        let loaded = try await catalog.read { db in try Self.loadCounters(db) }
        return OutboxStore(catalog: catalog, maxQueueBytes: maxQueueBytes, counters: loaded)
    }

    var snapshot: OutboxCounters { counters.withLockedValue { $0 } }

    private static func loadCounters(_ db: Database) throws -> OutboxCounters {
        var counts = OutboxCounters()
        let rows = try Row.fetchAll(db, sql: """
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
        try await catalog.writeWithoutTransaction { db in
            var delta = OutboxCounters()
            var outcomes: [StoreOutcome] = []
            try db.inTransaction(.immediate) {
                delta = OutboxCounters()
                outcomes = []
                var queued = self.snapshot.pendingBytes
                let exists = try db.cachedStatement(sql: "SELECT 1 FROM playlogOutbox WHERE recordId = ?")
                let insert = try db.cachedStatement(sql: """
                    INSERT OR IGNORE INTO playlogOutbox (recordId, kind, body, sizeBytes, state, attempts, createdAt)
                    VALUES (?, ?, ?, ?, 'pending', 0, ?)
                    """)
                let consumed = try db.cachedStatement(sql: """
                    INSERT INTO consumedProducts (productId, firstAt, lastAt, records) VALUES (?, ?, ?, 1)
                    ON CONFLICT(productId) DO UPDATE SET lastAt = excluded.lastAt, records = records + 1
                    """)
                for record in records {
                    let size = record.sizeBytes
                    if queued + size > self.maxQueueBytes {
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
    }

    // MARK: Delivering

    /// The oldest pending records, in the order they were recorded.
    func nextBatch(limit: Int) async throws -> [PendingRecord] {
        try await catalog.read { db in
            try Row.fetchAll(db, sql: """
                SELECT recordId, kind, body FROM playlogOutbox INDEXED BY playlogOutbox_state
                WHERE state = 'pending' ORDER BY rowid LIMIT ?
                """, arguments: [limit]).compactMap { row in
                RecordKind(rawValue: row["kind"]).map { PendingRecord(id: row["recordId"], kind: $0, body: row["body"]) }
            }
        }
    }

    /// Commits what the origin said about `sent`: accepted → delivered (body dropped),
    /// rejected → set aside with the reason, never sent again; the rest stays pending.
    /// Returns the records that actually changed state (a record already decided is left alone).
    func apply(_ verdict: BatchVerdict, sent: [PendingRecord], attempt: DeliveryAttempt) async throws -> (delivered: Int, rejected: [BatchVerdict.Rejection]) {
        let byID = Dictionary(sent.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        return try await catalog.writeWithoutTransaction { db in
            var delta = OutboxCounters()
            var delivered = 0
            var rejected: [BatchVerdict.Rejection] = []
            try db.inTransaction(.immediate) {
                delta = OutboxCounters()
                delivered = 0
                rejected = []
                let deliver = try db.cachedStatement(sql: """
                    UPDATE playlogOutbox SET state = 'delivered', body = '', deliveredAt = ?, attempts = attempts + 1
                    WHERE recordId = ? AND state = 'pending'
                    """)
                for id in verdict.accepted {
                    guard let record = byID[id] else { continue }
                    try deliver.execute(arguments: [attempt.endedAt, id])
                    if db.changesCount == 1 {
                        delivered += 1
                        delta[record.kind].pending -= 1
                        delta[record.kind].delivered += 1
                        delta.pendingBytes -= record.sizeBytes
                    }
                }
                let reject = try db.cachedStatement(sql: """
                    UPDATE playlogOutbox SET state = 'rejected', reason = ?, attempts = attempts + 1
                    WHERE recordId = ? AND state = 'pending'
                    """)
                for rejection in verdict.rejected {
                    guard let record = byID[rejection.id] else { continue }
                    try reject.execute(arguments: [rejection.reason, rejection.id])
                    if db.changesCount == 1 {
                        rejected.append(rejection)
                        delta[record.kind].pending -= 1
                        delta[record.kind].rejected += 1
                        delta.pendingBytes -= record.sizeBytes
                    }
                }
                try Self.countAttempt(db, ids: verdict.unanswered)
                try Self.log(attempt, db)
                return .commit
            }
            self.add(delta)
            return (delivered, rejected)
        }
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
        try db.execute(sql: """
            INSERT INTO playlogAttempts (startedAt, endedAt, records, accepted, rejected, result, error)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """, arguments: [attempt.startedAt, attempt.endedAt, attempt.records, attempt.accepted, attempt.rejected,
                             attempt.result.rawValue, error])
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
            try Date.fetchOne(db, sql: """
                SELECT createdAt FROM playlogOutbox INDEXED BY playlogOutbox_state
                WHERE state = 'pending' ORDER BY rowid LIMIT 1
                """)
        }
    }

    func lastAttempt() async throws -> DeliveryAttempt? {
        try await catalog.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM playlogAttempts ORDER BY id DESC LIMIT 1") else { return nil }
            let error = (row["error"] as String?).flatMap { try? JSONValue.parse(Array($0.utf8)) }
            return DeliveryAttempt(startedAt: row["startedAt"], endedAt: row["endedAt"], records: row["records"],
                                   accepted: row["accepted"], rejected: row["rejected"],
                                   result: DeliveryAttempt.Result(rawValue: row["result"]) ?? .failed, error: error)
        }
    }

    /// The most recently set-aside records, newest first: what status shows of the rejected.
    func recentRejections(limit: Int) async throws -> [JSONValue] {
        try await catalog.read { db in
            try Row.fetchAll(db, sql: """
                SELECT recordId, kind, reason FROM playlogOutbox INDEXED BY playlogOutbox_state
                WHERE state = 'rejected' ORDER BY rowid DESC LIMIT ?
                """, arguments: [limit]).map { row in
                ["id": .string(row["recordId"]), "kind": .string(row["kind"]), "reason": .string(row["reason"] ?? "")]
            }
        }
    }
}
