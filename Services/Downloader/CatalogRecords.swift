import Foundation
import GRDB

/// The downloader's writes to the shared catalog (CATALOG-CONTRACT): files, media items and
/// the download queue rows, plus the reference counting that keeps a file shared by a station
/// and a product until neither wants it.
enum CatalogRecords {
    /// Inserts or refreshes the file and media item for `item`; returns the file id and whether
    /// the file is already verified. A file whose declared content changed (other sha256 or
    /// size) starts over: its old bytes are not what the origin now promises.
    static func upsert(_ item: ManifestItem, db: Database, now: Date) throws -> (fileId: Int64, verified: Bool, stale: String?) {
        var stale: String?
        let relative = item.relativePath
        let existing = try Row.fetchOne(db, sql: "SELECT id, sha256, sizeBytes, state, localPath FROM files WHERE urlPath = ? OR localPath = ?",
                                        arguments: [item.urlPath, relative])
        let fileId: Int64
        var verified = false
        if let existing {
            fileId = existing["id"]
            let sameContent = (existing["sha256"] as String?) == item.sha256 && (existing["sizeBytes"] as Int64?) == item.sizeBytes
            if sameContent {
                verified = (existing["state"] as String) == "verified"
                try db.execute(sql: "UPDATE files SET url = ?, mimeType = ? WHERE id = ?", arguments: [item.url, item.mimeType, fileId])
            } else {
                stale = existing["localPath"]
                try db.execute(sql: """
                    UPDATE files SET url = ?, urlPath = ?, localPath = ?, mimeType = ?, sizeBytes = ?, sha256 = ?, bytesOnDisk = 0,
                    state = 'pending', attempts = 0, error = NULL, reason = NULL, completedAt = NULL WHERE id = ?
                    """, arguments: [item.url, item.urlPath, relative, item.mimeType, item.sizeBytes, item.sha256, fileId])
            }
        } else {
            try db.execute(sql: """
                INSERT INTO files (url, urlPath, localPath, mimeType, sizeBytes, sha256, bytesOnDisk, state, createdAt)
                VALUES (?, ?, ?, ?, ?, ?, 0, 'pending', ?)
                """, arguments: [item.url, item.urlPath, relative, item.mimeType, item.sizeBytes, item.sha256, now])
            fileId = db.lastInsertedRowID
        }
        try db.execute(sql: """
            INSERT INTO mediaItems (id, productType, title, artist, album, durationSeconds, audioQuality, codec, sampleRate,
                                    bitDepth, trackGain, trackPeak, albumGain, albumPeak, manifestType, fileId)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'progressive', ?)
            ON CONFLICT(id) DO UPDATE SET productType = excluded.productType,
                title = COALESCE(excluded.title, title), artist = COALESCE(excluded.artist, artist),
                album = COALESCE(excluded.album, album), durationSeconds = COALESCE(excluded.durationSeconds, durationSeconds),
                audioQuality = COALESCE(excluded.audioQuality, audioQuality), codec = COALESCE(excluded.codec, codec),
                sampleRate = COALESCE(excluded.sampleRate, sampleRate), bitDepth = COALESCE(excluded.bitDepth, bitDepth),
                trackGain = COALESCE(excluded.trackGain, trackGain), trackPeak = COALESCE(excluded.trackPeak, trackPeak),
                albumGain = COALESCE(excluded.albumGain, albumGain), albumPeak = COALESCE(excluded.albumPeak, albumPeak),
                fileId = excluded.fileId
            """, arguments: [item.id, item.productType, item.title, item.artist, item.album, item.durationSeconds,
                             item.audioQuality, item.codec, item.sampleRate, item.bitDepth, item.trackGain, item.trackPeak,
                             item.albumGain, item.albumPeak, fileId])
        return (fileId, verified, stale)
    }

    /// Puts the file in the queue for `owner` (or keeps it there); a verified file's row is 'done'.
    static func want(fileId: Int64, ownerKind: String, ownerId: String, verified: Bool, db: Database, now: Date) throws {
        try db.execute(sql: """
            INSERT INTO downloads (fileId, ownerKind, ownerId, state, attempts, updatedAt) VALUES (?, ?, ?, ?, 0, ?)
            ON CONFLICT(fileId, ownerKind, ownerId) DO UPDATE SET state = excluded.state, updatedAt = excluded.updatedAt
            """, arguments: [fileId, ownerKind, ownerId, verified ? "done" : "queued", now])
    }

    /// Deletes files (and their media items) nothing wants any more; returns their relative
    /// paths so the caller removes the bytes once the transaction committed.
    static func collectGarbage(db: Database) throws -> [(id: Int64, path: String)] {
        let rows = try Row.fetchAll(db, sql: """
            SELECT f.id, f.localPath FROM files f
            WHERE NOT EXISTS (SELECT 1 FROM downloads d WHERE d.fileId = f.id)
              AND NOT EXISTS (SELECT 1 FROM mediaItems m JOIN stationItems si ON si.itemId = m.id WHERE m.fileId = f.id)
              AND NOT EXISTS (SELECT 1 FROM mediaItems m JOIN offlineProducts p ON p.productId = m.id
                              WHERE m.fileId = f.id AND p.state != 'deleted')
            """)
        let dead = rows.map { (id: $0["id"] as Int64, path: $0["localPath"] as String) }
        for file in dead {
            try db.execute(sql: """
                DELETE FROM mediaItems WHERE fileId = ? AND NOT EXISTS (SELECT 1 FROM stationItems si WHERE si.itemId = mediaItems.id)
                """, arguments: [file.id])
            try db.execute(sql: "DELETE FROM files WHERE id = ?", arguments: [file.id])
        }
        return dead
    }

    /// Station progress: (pending, failed, total), counting files that gave up as failed.
    static func stationProgress(_ stationId: String, maxAttempts: Int, db: Database) throws -> (pending: Int, failed: Int, total: Int) {
        let row = try Row.fetchOne(db, sql: """
            SELECT COUNT(*) AS total,
                   SUM(CASE WHEN f.state = 'verified' THEN 1 ELSE 0 END) AS verified,
                   SUM(CASE WHEN f.state != 'verified' AND (f.attempts >= ? OR f.id IS NULL) THEN 1 ELSE 0 END) AS failed
            FROM stationItems si JOIN mediaItems m ON m.id = si.itemId LEFT JOIN files f ON f.id = m.fileId
            WHERE si.stationId = ?
            """, arguments: [maxAttempts, stationId])
        let total: Int = row?["total"] ?? 0
        let verified: Int = row?["verified"] ?? 0
        let failed: Int = row?["failed"] ?? 0
        return (max(0, total - verified - failed), failed, total)
    }
}
