import Foundation
import GRDB
import StateDB

/// The catalog's `stations` and `stationItems` rows (Feed.fm offline stations): what is held,
/// what a sync asks for and applies, and how far each station's files have come.
struct StationStore: Sendable {
    let catalog: StateDB

    /// A station with at least one verified item, as `stations.list` shows it under `localOffline`.
    struct HeldStation: Sendable {
        var id: String
        var name: String
        var itemCount: Int
        var verifiedCount: Int
        /// Of the verified items.
        var durationSeconds: Double
        var sizeBytes: Int64
        var expiresAt: Date?
        var syncedAt: Date?
        var onExpiry: String
    }

    /// What a sync tells the origin: the items on disk, those heard, and the stored target.
    struct SyncBasis: Sendable {
        var have: [String]
        var played: [String]
        var targetMinutes: Double?
    }

    /// A station manifest that passed the hostile-input checks, as a sync applies it.
    struct Manifest: Sendable {
        var stationId: String
        var name: String?
        var manifestHash: String?
        var targetMinutes: Double?
        var expiresAt: Date?
        var revalidateAt: Date?
        var onExpiry: String
        var items: [ManifestItem]
        var remove: [String]
        /// Files at this many attempts had failed for good; the sync queues them again.
        var maxAttempts: Int
    }

    /// What applying a manifest changed: the items new to the station, and the files whose bytes
    /// the catalog no longer points at (other content under their name, or wanted by nobody).
    struct Applied: Sendable {
        var added: [String]
        var stale: [(fileId: Int64, path: String)]
        /// Items whose file had failed for good and is queued again (attempts reset).
        var requeued: [StationItemRef] = []
        /// The station's counts as the manifest left them (read in the same transaction).
        var progress = Progress(pending: 0, failed: 0, total: 0)
    }

    /// One item of one station.
    struct StationItemRef: Sendable, Equatable {
        var stationId: String
        var itemId: String
    }

    /// A station's files: still to come, given up (`maxAttempts` reached, or no file), and all.
    struct Progress: Sendable {
        var pending: Int
        var failed: Int
        var total: Int
    }

    /// Stations with at least one verified item (docs/catalog.md), by name.
    func held() async throws -> [HeldStation] {
        try await catalog.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT s.id, s.name, s.expiresAt, s.onExpiry, s.syncedAt, COUNT(si.itemId) AS itemCount,
                           SUM(CASE WHEN f.state = 'verified' THEN 1 ELSE 0 END) AS verifiedCount,
                           SUM(CASE WHEN f.state = 'verified' THEN COALESCE(m.durationSeconds, 0) ELSE 0 END) AS seconds,
                           SUM(CASE WHEN f.state = 'verified' THEN COALESCE(f.sizeBytes, 0) ELSE 0 END) AS bytes
                    FROM stations s JOIN stationItems si ON si.stationId = s.id JOIN mediaItems m ON m.id = si.itemId
                    LEFT JOIN files f ON f.id = m.fileId
                    GROUP BY s.id HAVING verifiedCount > 0 ORDER BY s.name
                    """
            ).map { row in
                HeldStation(
                    id: row["id"], name: row["name"], itemCount: row["itemCount"], verifiedCount: row["verifiedCount"],
                    durationSeconds: row["seconds"] as Double? ?? 0, sizeBytes: row["bytes"] as Int64? ?? 0,
                    expiresAt: row.date("expiresAt"), syncedAt: row.date("syncedAt"), onExpiry: row["onExpiry"])
            }
        }
    }

    /// The ids of every station held.
    func ids() async throws -> [String] {
        try await catalog.read { db in try String.fetchAll(db, sql: "SELECT id FROM stations ORDER BY id") }
    }

    func syncBasis(stationId: String) async throws -> SyncBasis {
        try await catalog.read { db in
            let have = try String.fetchAll(
                db,
                sql: """
                    SELECT si.itemId FROM stationItems si JOIN mediaItems m ON m.id = si.itemId JOIN files f ON f.id = m.fileId
                    WHERE si.stationId = ? AND f.state = 'verified' ORDER BY si.position
                    """, arguments: [stationId])
            let played = try String.fetchAll(
                db, sql: "SELECT itemId FROM stationItems WHERE stationId = ? AND playedAt IS NOT NULL",
                arguments: [stationId])
            let target = try Double.fetchOne(db, sql: "SELECT targetMinutes FROM stations WHERE id = ?", arguments: [stationId])
            return SyncBasis(have: have, played: played, targetMinutes: target)
        }
    }

    /// Applies a manifest in one transaction: the station row, its new items at the end, the
    /// files they need queued for the station, the items it removes, and the files nothing holds
    /// any more. The caller deletes the `stale` bytes after the commit.
    ///
    /// With `from` > 0 the first items were applied already (`applyFirst`): only the rest is.
    func apply(_ manifest: Manifest, from: Int = 0, now: Date) async throws -> Applied {
        try await catalog.write { db in
            let stationId = manifest.stationId
            try Self.upsertStation(manifest, withHash: true, db: db, now: now)
            let (added, stale) = try Self.applyItems(manifest.items.dropFirst(from), stationId: stationId, db: db, now: now)
            for id in manifest.remove {
                try db.execute(
                    sql: """
                        DELETE FROM downloads WHERE ownerKind = 'station' AND ownerId = ?
                          AND fileId IN (SELECT fileId FROM mediaItems WHERE id = ?)
                        """, arguments: [stationId, id])
                try db.execute(sql: "DELETE FROM stationItems WHERE stationId = ? AND itemId = ?", arguments: [stationId, id])
            }
            let requeued = try Self.requeueFailed(stationId: stationId, maxAttempts: manifest.maxAttempts, db: db)
            let garbage = try FileStore.collectGarbage(db: db)
            return Applied(
                added: added, stale: stale + garbage.map { ($0.id, $0.path) }, requeued: requeued,
                progress: try Self.progress(stationId, maxAttempts: manifest.maxAttempts, db: db))
        }
    }

    /// Applies only the manifest's first `count` items (and the station row, without the new
    /// manifest hash, which only the complete `apply(from: count)` records), so that downloads can
    /// start while the rest of a large manifest is written. Nothing is removed here; if the
    /// process stops in between, the next sync still sees the old hash and brings the rest.
    func applyFirst(_ manifest: Manifest, count: Int, now: Date) async throws -> Applied {
        try await catalog.write { db in
            try Self.upsertStation(manifest, withHash: false, db: db, now: now)
            let (added, stale) = try Self.applyItems(manifest.items.prefix(count), stationId: manifest.stationId, db: db, now: now)
            return Applied(added: added, stale: stale)
        }
    }

    private static func upsertStation(_ manifest: Manifest, withHash: Bool, db: Database, now: Date) throws {
        let hash = withHash ? "excluded.manifestHash" : "manifestHash"
        try db.execute(
            sql: """
                INSERT INTO stations (id, name, manifestHash, targetMinutes, expiresAt, revalidateAt, onExpiry, syncedAt, createdAt, lastError)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)
                ON CONFLICT(id) DO UPDATE SET name = COALESCE(?, name), manifestHash = \(hash),
                    targetMinutes = excluded.targetMinutes, expiresAt = excluded.expiresAt, revalidateAt = excluded.revalidateAt,
                    onExpiry = excluded.onExpiry, syncedAt = excluded.syncedAt, lastError = NULL
                """,
            arguments: [
                manifest.stationId, manifest.name ?? manifest.stationId, withHash ? manifest.manifestHash : nil,
                manifest.targetMinutes, manifest.expiresAt?.databaseText, manifest.revalidateAt?.databaseText, manifest.onExpiry, now.databaseText,
                now.databaseText, manifest.name,
            ])
    }

    /// The items' files upserted and wanted for the station, new ones appended to its list.
    private static func applyItems(
        _ items: ArraySlice<ManifestItem>, stationId: String, db: Database,
        now: Date
    ) throws -> (added: [String], stale: [(fileId: Int64, path: String)]) {
        var position = try Int.fetchOne(db, sql: "SELECT MAX(position) FROM stationItems WHERE stationId = ?", arguments: [stationId]) ?? -1
        var added: [String] = []
        var stale: [(fileId: Int64, path: String)] = []
        // The station's items, read once rather than looked up per manifest item.
        var present = try String.fetchSet(db, sql: "SELECT itemId FROM stationItems WHERE stationId = ?", arguments: [stationId])
        for item in items {
            let (fileId, verified, oldPath) = try FileStore.upsert(item, db: db, now: now)
            if let oldPath { stale.append((fileId, oldPath)) }
            if present.insert(item.id).inserted {
                position += 1
                try db.cachedStatement(sql: "INSERT INTO stationItems (stationId, itemId, position) VALUES (?, ?, ?)")
                    .execute(arguments: [stationId, item.id, position])
                added.append(item.id)
            }
            try FileStore.want(fileId: fileId, ownerKind: "station", ownerId: stationId, verified: verified, db: db, now: now)
        }
        return (added, stale)
    }

    /// The station's items whose file failed for good (`maxAttempts` reached) are wanted again:
    /// attempts back to 0 and the station's request queued. With `stationId` nil, every station's.
    static func requeueFailed(stationId: String?, maxAttempts: Int, db: Database) throws -> [StationItemRef] {
        let scope = stationId == nil ? "" : "AND si.stationId = ?"
        let arguments: StatementArguments = stationId.map { [maxAttempts, $0] } ?? [maxAttempts]
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT si.stationId, si.itemId, f.id AS fileId FROM stationItems si JOIN mediaItems m ON m.id = si.itemId
                  JOIN files f ON f.id = m.fileId
                WHERE f.state != 'verified' AND f.attempts >= ? \(scope)
                """, arguments: arguments)
        for row in rows {
            let fileId: Int64 = row["fileId"]
            let station: String = row["stationId"]
            try db.execute(
                sql: "UPDATE files SET attempts = 0, error = NULL, reason = NULL WHERE id = ? AND state != 'verified'",
                arguments: [fileId])
            try db.execute(
                sql: """
                    UPDATE downloads SET state = 'queued', attempts = 0 WHERE fileId = ? AND ownerKind = 'station' AND ownerId = ? AND state = 'failed'
                    """, arguments: [fileId, station])
        }
        return rows.map { StationItemRef(stationId: $0["stationId"], itemId: $0["itemId"]) }
    }

    /// At start: every station's failed items are tried again.
    func requeueFailed(maxAttempts: Int) async throws -> [StationItemRef] {
        try await catalog.write { db in try Self.requeueFailed(stationId: nil, maxAttempts: maxAttempts, db: db) }
    }

    /// Keeps why the station's last sync failed (`lastError`).
    func recordSyncFailure(stationId: String, error: String) async throws {
        try await catalog.write { db in
            try db.execute(sql: "UPDATE stations SET lastError = ? WHERE id = ?", arguments: [error, stationId])
        }
    }

    /// Counts files that gave up as failed.
    func progress(_ stationId: String, maxAttempts: Int) async throws -> Progress {
        try await catalog.read { db in try Self.progress(stationId, maxAttempts: maxAttempts, db: db) }
    }

    /// The same, inside a transaction of the caller's.
    static func progress(_ stationId: String, maxAttempts: Int, db: Database) throws -> Progress {
        let row = try Row.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT COUNT(*) AS total,
                           SUM(CASE WHEN f.state = 'verified' THEN 1 ELSE 0 END) AS verified,
                           SUM(CASE WHEN f.state != 'verified' AND (f.attempts >= ? OR f.id IS NULL) THEN 1 ELSE 0 END) AS failed
                    FROM stationItems si JOIN mediaItems m ON m.id = si.itemId LEFT JOIN files f ON f.id = m.fileId
                    WHERE si.stationId = ?
                    """), arguments: [maxAttempts, stationId])
        let total: Int = row?["total"] ?? 0
        let verified: Int = row?["verified"] ?? 0
        let failed: Int = row?["failed"] ?? 0
        return Progress(pending: max(0, total - verified - failed), failed: failed, total: total)
    }
}
