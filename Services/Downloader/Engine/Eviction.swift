import Foundation
import GRDB

/// Makes room by rotating station content (Feed.fm): only tracks already heard, least
/// recently played first (`stationItems.playedAt`, set by the player). Content the user asked
/// for explicitly (an `offline.add` token that is not deleted) is never evicted, nor is a
/// file still unheard in any station that holds it, nor one being downloaded.
enum Eviction {
    struct Victim: Sendable, Equatable {
        var fileId: Int64
        var path: String
        var sizeBytes: Int64
        var items: [String]
        var stations: [String]
    }

    /// Every evictable file, in eviction order.
    static func candidates(_ db: Database, excluding: Set<Int64>) throws -> [Victim] {
        try Row.fetchAll(db, sql: """
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
            """).compactMap { row -> Victim? in
            let id: Int64 = row["id"]
            guard !excluding.contains(id) else { return nil }
            return Victim(fileId: id, path: row["localPath"], sizeBytes: row["size"],
                          items: (row["items"] as String? ?? "").split(separator: ",").map(String.init),
                          stations: (row["stations"] as String? ?? "").split(separator: ",").map(String.init))
        }
    }

    /// Removes the first candidates until `bytes` are freed (nothing when all of them would not do),
    /// inside the caller's transaction; the caller unlinks the returned paths after commit.
    static func evict(bytes: Int64, _ db: Database, excluding: Set<Int64>) throws -> [Victim] {
        let all = try candidates(db, excluding: excluding)
        // Evicting heard tracks and still not making room would lose them for nothing.
        guard all.reduce(0, { $0 + $1.sizeBytes }) >= bytes else { return [] }
        var freed: Int64 = 0
        var chosen: [Victim] = []
        for victim in all where freed < bytes {
            chosen.append(victim)
            freed += victim.sizeBytes
        }
        for victim in chosen {
            try db.execute(sql: "DELETE FROM downloads WHERE fileId = ? AND ownerKind = 'station'", arguments: [victim.fileId])
            try db.execute(sql: "DELETE FROM stationItems WHERE itemId IN (SELECT id FROM mediaItems WHERE fileId = ?)",
                           arguments: [victim.fileId])
        }
        if !chosen.isEmpty { _ = try CatalogRecords.collectGarbage(db: db) }
        return chosen
    }
}
