import Foundation
import GRDB

extension FileStore {
    /// Evicts, in one transaction, the files `choose` picks among the evictable ones (heard
    /// station tracks, least recently played first; see `Eviction`): their station items and
    /// station requests go, and so do the files nothing holds any more. The caller deletes the
    /// returned files' bytes after the commit.
    func evict(
        excluding: Set<Int64>,
        choose: @escaping @Sendable ([Eviction.Victim]) -> [Eviction.Victim]
    ) async throws -> [Eviction.Victim] {
        try await catalog.write { db in
            let chosen = choose(try Self.evictionCandidates(db, excluding: excluding))
            for victim in chosen {
                try db.execute(sql: "DELETE FROM downloads WHERE fileId = ? AND ownerKind = 'station'", arguments: [victim.fileId])
                try db.execute(
                    sql: "DELETE FROM stationItems WHERE itemId IN (SELECT id FROM mediaItems WHERE fileId = ?)",
                    arguments: [victim.fileId])
            }
            if !chosen.isEmpty { _ = try Self.collectGarbage(db: db) }
            return chosen
        }
    }

    /// Every evictable file, in eviction order.
    private static func evictionCandidates(_ db: Database, excluding: Set<Int64>) throws -> [Eviction.Victim] {
        try Row.fetchAll(
            db,
            sql: """
                SELECT f.id, f.localPath, COALESCE(f.sizeBytes, 0) AS size, MAX(si.playedAt) AS lastPlayed,
                       GROUP_CONCAT(DISTINCT si.itemId) AS items, GROUP_CONCAT(DISTINCT si.stationId) AS stations
                FROM files f JOIN mediaItems m ON m.fileId = f.id JOIN stationItems si ON si.itemId = m.id
                WHERE f.state = 'verified'
                  AND NOT EXISTS (SELECT 1 FROM downloads d WHERE d.fileId = f.id AND d.ownerKind = 'product')
                  AND NOT EXISTS (SELECT 1 FROM mediaItems m2 JOIN offlineProducts p ON p.productId = m2.id
                                  WHERE m2.fileId = f.id AND p.state != 'deleted')
                GROUP BY f.id
                HAVING SUM(CASE WHEN si.playedAt IS NULL THEN 1 ELSE 0 END) = 0
                ORDER BY lastPlayed ASC, f.id ASC
                """
        ).compactMap { row -> Eviction.Victim? in
            let id: Int64 = row["id"]
            guard !excluding.contains(id) else { return nil }
            return Eviction.Victim(
                fileId: id, path: row["localPath"], sizeBytes: row["size"],
                items: (row["items"] as String? ?? "").split(separator: ",").map(String.init),
                stations: (row["stations"] as String? ?? "").split(separator: ",").map(String.init))
        }
    }
}
