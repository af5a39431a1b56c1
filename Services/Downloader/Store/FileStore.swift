import Foundation
import GRDB
import StateDB

/// The catalog's `files` and `mediaItems` rows (docs/catalog.md), what the media directory holds
/// as the catalog sees it: the records a manifest writes, the `downloads` row that makes an owner
/// want a file, the reference counting that keeps a file shared by a station and a product until
/// neither wants it, eviction of heard station tracks, the storage the files take, and the
/// repairs of the start-up reconcile.
///
/// The `static` functions run inside a transaction of the caller's (a manifest, a swap, a
/// deletion writes several tables at once); the others are transactions of their own.
struct FileStore: Sendable {
    let catalog: StateDB

    // MARK: Inside a caller's transaction

    /// Inserts or refreshes the file and media item for `item`; returns the file id and whether
    /// the file is already verified. A file whose declared content changed (other sha256 or
    /// size) starts over: its old bytes are not what the origin now promises.
    static func upsert(_ item: ManifestItem, db: Database, now: Date) throws -> (fileId: Int64, verified: Bool, stale: String?) {
        let file = try upsertFile(item, db: db, now: now)
        try upsertMediaItem(item, fileId: file.fileId, db: db)
        return file
    }

    private static func upsertFile(_ item: ManifestItem, db: Database, now: Date) throws -> (fileId: Int64, verified: Bool, stale: String?) {
        let relative = item.relativePath
        // Cached statements here and below: a manifest runs them once per item.
        let existing = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT id, sha256, sizeBytes, state, localPath FROM files WHERE urlPath = ? OR localPath = ?"),
            arguments: [item.urlPath, relative])
        guard let existing else {
            return (try insertFile(item, urlPath: item.urlPath, localPath: relative, db: db, now: now), false, nil)
        }
        let fileId: Int64 = existing["id"]
        if sameContent(existing, item) {
            try db.cachedStatement(sql: "UPDATE files SET url = ?, mimeType = ? WHERE id = ?").execute(arguments: [item.url, item.mimeType, fileId])
            return (fileId, (existing["state"] as String) == "verified", nil)
        }
        try db.execute(
            sql: """
                UPDATE files SET url = ?, urlPath = ?, localPath = ?, mimeType = ?, sizeBytes = ?, sha256 = ?, bytesOnDisk = 0,
                state = 'pending', attempts = 0, error = NULL, reason = NULL, completedAt = NULL WHERE id = ?
                """, arguments: [item.url, item.urlPath, relative, item.mimeType, item.sizeBytes, item.sha256, fileId])
        return (fileId, false, existing["localPath"])
    }

    /// The file for a re-offline (TIDAL re-validation with a new `manifestHash`): unlike `upsert`
    /// it never touches a file that holds other content, because the old file must stay playable
    /// until the new one is committed. A file with the same content is shared; otherwise, when
    /// the URL or the local name is taken, the new file gets names of its own, marked with its
    /// checksum. The media item is left alone (the swap writes it).
    static func stageFile(_ item: ManifestItem, db: Database, now: Date) throws -> (fileId: Int64, verified: Bool) {
        let relative = item.relativePath
        let taken = try Row.fetchAll(
            db, sql: "SELECT id, sha256, sizeBytes, state, localPath FROM files WHERE urlPath = ? OR localPath = ?",
            arguments: [item.urlPath, relative])
        if let same = taken.first(where: { sameContent($0, item) }) {
            let fileId: Int64 = same["id"]
            try db.execute(sql: "UPDATE files SET url = ? WHERE id = ?", arguments: [item.url, fileId])
            return (fileId, (same["state"] as String) == "verified")
        }
        guard !taken.isEmpty else { return (try insertFile(item, urlPath: item.urlPath, localPath: relative, db: db, now: now), false) }
        let mark = String(item.sha256.prefix(12))
        let localPath = (relative as NSString).deletingPathExtension + ".\(mark)." + (relative as NSString).pathExtension
        if let again = try Row.fetchOne(db, sql: "SELECT id, state, sha256, sizeBytes FROM files WHERE localPath = ?", arguments: [localPath]),
            sameContent(again, item)
        {
            return (again["id"], (again["state"] as String) == "verified")
        }
        return (try insertFile(item, urlPath: item.urlPath + "#" + mark, localPath: localPath, db: db, now: now), false)
    }

    private static func sameContent(_ row: Row, _ item: ManifestItem) -> Bool {
        (row["sha256"] as String?) == item.sha256 && (row["sizeBytes"] as Int64?) == item.sizeBytes
    }

    private static func insertFile(_ item: ManifestItem, urlPath: String, localPath: String, db: Database, now: Date) throws -> Int64 {
        try db.cachedStatement(
            sql: """
                INSERT INTO files (url, urlPath, localPath, mimeType, sizeBytes, sha256, bytesOnDisk, state, createdAt)
                VALUES (?, ?, ?, ?, ?, ?, 0, 'pending', ?)
                """
        ).execute(arguments: [item.url, urlPath, localPath, item.mimeType, item.sizeBytes, item.sha256, now.databaseText])
        return db.lastInsertedRowID
    }

    /// The playable item's row, pointing at `fileId`.
    static func upsertMediaItem(_ item: ManifestItem, fileId: Int64, db: Database) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO mediaItems (id, productType, title, artist, album, durationSeconds, audioQuality, codec, sampleRate,
                                        bitDepth, trackGain, trackPeak, albumGain, albumPeak, manifestType, fileId)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET productType = excluded.productType, manifestType = excluded.manifestType,
                    title = COALESCE(excluded.title, title), artist = COALESCE(excluded.artist, artist),
                    album = COALESCE(excluded.album, album), durationSeconds = COALESCE(excluded.durationSeconds, durationSeconds),
                    audioQuality = COALESCE(excluded.audioQuality, audioQuality), codec = COALESCE(excluded.codec, codec),
                    sampleRate = COALESCE(excluded.sampleRate, sampleRate), bitDepth = COALESCE(excluded.bitDepth, bitDepth),
                    trackGain = COALESCE(excluded.trackGain, trackGain), trackPeak = COALESCE(excluded.trackPeak, trackPeak),
                    albumGain = COALESCE(excluded.albumGain, albumGain), albumPeak = COALESCE(excluded.albumPeak, albumPeak),
                    fileId = excluded.fileId
                """
        ).execute(arguments: [
            item.id, item.productType, item.title, item.artist, item.album, item.durationSeconds,
            item.audioQuality, item.codec, item.sampleRate, item.bitDepth, item.trackGain, item.trackPeak,
            item.albumGain, item.albumPeak, item.manifestType ?? "progressive", fileId,
        ])
    }

    /// Puts the file in the queue for `owner` (or keeps it there); a verified file's row is 'done'.
    static func want(fileId: Int64, ownerKind: String, ownerId: String, verified: Bool, db: Database, now: Date) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO downloads (fileId, ownerKind, ownerId, state, attempts, updatedAt) VALUES (?, ?, ?, ?, 0, ?)
                ON CONFLICT(fileId, ownerKind, ownerId) DO UPDATE SET state = excluded.state, updatedAt = excluded.updatedAt
                """
        ).execute(arguments: [fileId, ownerKind, ownerId, verified ? "done" : "queued", now.databaseText])
    }

    /// Deletes files (and their media items) nothing wants any more; returns their relative
    /// paths so the caller removes the bytes once the transaction committed.
    static func collectGarbage(db: Database) throws -> [(id: Int64, path: String)] {
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT f.id, f.localPath FROM files f
                WHERE NOT EXISTS (SELECT 1 FROM downloads d WHERE d.fileId = f.id)
                  AND NOT EXISTS (SELECT 1 FROM mediaItems m JOIN stationItems si ON si.itemId = m.id WHERE m.fileId = f.id)
                  AND NOT EXISTS (SELECT 1 FROM mediaItems m JOIN offlineProducts p ON p.productId = m.id
                                  WHERE m.fileId = f.id AND p.state != 'deleted')
                  AND NOT EXISTS (SELECT 1 FROM productFiles pf JOIN offlineProducts p ON p.productId = pf.productId
                                  WHERE pf.fileId = f.id AND p.state != 'deleted')
                """)
        let dead = rows.map { (id: $0["id"] as Int64, path: $0["localPath"] as String) }
        for file in dead {
            try db.execute(
                sql: """
                    DELETE FROM mediaItems WHERE fileId = ? AND NOT EXISTS (SELECT 1 FROM stationItems si WHERE si.itemId = mediaItems.id)
                    """, arguments: [file.id])
            try db.execute(sql: "DELETE FROM files WHERE id = ?", arguments: [file.id])
        }
        return dead
    }

    // MARK: Transactions of their own

    /// A file the catalog knows, as `offline.estimate` weighs it.
    struct KnownFile: Sendable {
        var localPath: String
        var isVerified: Bool
        var sizeBytes: Int64?
    }

    /// The file stored under this URL path (the cache key), if any.
    func file(urlPath: String) async throws -> KnownFile? {
        try await catalog.read { db in
            try Row.fetchOne(db, sql: "SELECT localPath, state, sizeBytes FROM files WHERE urlPath = ?", arguments: [urlPath])
                .map { KnownFile(localPath: $0["localPath"], isVerified: ($0["state"] as String) == "verified", sizeBytes: $0["sizeBytes"]) }
        }
    }

    /// What offlined content holds: verified files at their size, unfinished ones at what their
    /// `.part` holds, but for the running ones (`excluding`), which the caller reserves at their full size.
    func cacheUsed(excluding: [Int64] = []) async throws -> Int64 {
        try await catalog.read { db in
            let skip = excluding.isEmpty ? "" : "WHERE id NOT IN (\(excluding.sqlList))"
            return try Int64.fetchOne(
                db,
                sql: """
                    SELECT COALESCE(SUM(CASE WHEN state = 'verified' THEN COALESCE(sizeBytes, 0) ELSE bytesOnDisk END), 0) FROM files \(skip)
                    """) ?? 0
        }
    }

    /// The bytes on disk of the given files, together (what the running downloads have written).
    func bytesOnDisk(of fileIds: [Int64]) async throws -> Int64 {
        guard !fileIds.isEmpty else { return 0 }
        return try await catalog.read { db in
            try Int64.fetchOne(
                db, sql: "SELECT COALESCE(SUM(bytesOnDisk), 0) FROM files WHERE id IN (\(fileIds.map { _ in "?" }.joined(separator: ",")))",
                arguments: StatementArguments(fileIds)) ?? 0
        }
    }

    /// An unfinished file whose bytes were deleted starts from nothing.
    func forgetPartial(fileId: Int64) async throws {
        try await catalog.write { db in
            try db.execute(sql: "UPDATE files SET state = 'pending', bytesOnDisk = 0 WHERE id = ? AND state != 'verified'", arguments: [fileId])
        }
    }
}
