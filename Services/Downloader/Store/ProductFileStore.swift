import Foundation
import GRDB
import StateDB
import Wire

/// The catalog's `productFiles` rows (docs/catalog.md): the files a product needs besides its
/// main one — an HLS presentation's playlists, segments and init sections, and any product's
/// poster and thumbnail. Each is an ordinary `files` row the engine downloads for the token
/// through its own `downloads` row; the product is `cached` once all of them are verified.
///
/// The `static` functions run inside a transaction of the caller's (`ProductStore`,
/// `DownloadQueueStore`, `DurableCommitter`).
enum ProductFileStore {
    /// Lists `files` for `productId` and makes the token want each one; files the product
    /// listed before and no longer does are let go of (the garbage collection deletes them once
    /// nothing else wants them). Returns whether all are verified, and the local paths of files
    /// whose declared content changed, whose old bytes the caller deletes after the commit.
    ///
    /// `within` (partial prepositioning): the token wants only the files that
    /// `PlannedFile.isWanted(within:)` keeps; the others are listed all the same.
    /// `wantedVerified` says whether those it wants are all verified.
    static func attach(
        _ files: [PlannedFile], productId: String, token: String, within: Double? = nil, db: Database,
        now: Date
    ) throws -> (allVerified: Bool, wantedVerified: Bool, stale: [(fileId: Int64, path: String)]) {
        var allVerified = true
        var wantedVerified = true
        var stale: [(Int64, String)] = []
        var kept: [Int64] = []
        for (position, planned) in files.enumerated() {
            let (fileId, verified, old) = try upsertFile(planned, db: db, now: now)
            if let old { stale.append((fileId, old)) }
            allVerified = allVerified && verified
            kept.append(fileId)
            try db.execute(sql: "UPDATE files SET attempts = 0 WHERE id = ? AND state != 'verified'", arguments: [fileId])
            try db.execute(
                sql: """
                    INSERT INTO productFiles (productId, name, fileId, role, position) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT(productId, name) DO UPDATE SET fileId = excluded.fileId, role = excluded.role, position = excluded.position
                    """, arguments: [productId, planned.name, fileId, planned.role.rawValue, position])
            guard planned.isWanted(within: within) else { continue }
            wantedVerified = wantedVerified && verified
            try FileStore.want(fileId: fileId, ownerKind: "product", ownerId: token, verified: verified, db: db, now: now)
        }
        let others = kept.isEmpty ? "" : "AND fileId NOT IN (\(kept.sqlList))"
        let gone = try Int64.fetchAll(db, sql: "SELECT fileId FROM productFiles WHERE productId = ? \(others)", arguments: [productId])
        if !gone.isEmpty {
            let goneList = gone.sqlList
            try db.execute(sql: "DELETE FROM productFiles WHERE productId = ? AND fileId IN (\(goneList))", arguments: [productId])
            try db.execute(
                sql: "DELETE FROM downloads WHERE ownerKind = 'product' AND ownerId = ? AND fileId IN (\(goneList))",
                arguments: [token])
        }
        return (allVerified, wantedVerified, stale)
    }

    /// The `files` row for `planned`, by URL path or local path. A file whose declared content
    /// changed (size or checksum) starts over; the old local path is returned for deletion. A
    /// planned file of unknown size declares none: the size a `GET` told the row is kept.
    private static func upsertFile(_ planned: PlannedFile, db: Database, now: Date) throws -> (Int64, Bool, String?) {
        if let row = try Row.fetchOne(
            db, sql: "SELECT id, sha256, sizeBytes, state, localPath FROM files WHERE urlPath = ? OR localPath = ?",
            arguments: [planned.urlPath, planned.localPath])
        {
            let fileId: Int64 = row["id"]
            let sameSize = planned.sizeBytes == nil || (row["sizeBytes"] as Int64?) == planned.sizeBytes
            let same =
                sameSize && (row["sha256"] as String?) == planned.sha256
                && (row["localPath"] as String) == planned.localPath
            if same {
                try db.execute(sql: "UPDATE files SET url = ?, mimeType = ? WHERE id = ?", arguments: [planned.url, planned.mimeType, fileId])
                return (fileId, (row["state"] as String) == "verified", nil)
            }
            try db.execute(
                sql: """
                    UPDATE files SET url = ?, urlPath = ?, localPath = ?, mimeType = ?, sizeBytes = ?, sha256 = ?, bytesOnDisk = 0,
                    state = 'pending', attempts = 0, error = NULL, reason = NULL, completedAt = NULL WHERE id = ?
                    """, arguments: [planned.url, planned.urlPath, planned.localPath, planned.mimeType, planned.sizeBytes, planned.sha256, fileId])
            return (fileId, false, row["localPath"])
        }
        return (try insert(planned, db: db, now: now), false, nil)
    }

    /// A new `files` row for `planned`, pending.
    static func insert(_ planned: PlannedFile, db: Database, now: Date) throws -> Int64 {
        try db.execute(
            sql: """
                INSERT INTO files (url, urlPath, localPath, mimeType, sizeBytes, sha256, bytesOnDisk, state, createdAt)
                VALUES (?, ?, ?, ?, ?, ?, 0, 'pending', ?)
                """, arguments: [planned.url, planned.urlPath, planned.localPath, planned.mimeType, planned.sizeBytes, planned.sha256, now.databaseText])
        return db.lastInsertedRowID
    }

    /// Every file of the token's product: its main file and those of `productFiles`.
    static func fileIds(token: String, db: Database) throws -> [Int64] {
        try Int64.fetchAll(
            db,
            sql: """
                SELECT m.fileId FROM offlineProducts p JOIN mediaItems m ON m.id = p.productId WHERE p.token = ? AND m.fileId IS NOT NULL
                UNION SELECT pf.fileId FROM offlineProducts p JOIN productFiles pf ON pf.productId = p.productId WHERE p.token = ?
                """, arguments: [token, token])
    }

    /// SQL condition on a product's `mediaItems` row `m`: its main file and all its
    /// `productFiles` are verified.
    static let allVerifiedSQL = """
        (SELECT state FROM files WHERE id = m.fileId) = 'verified'
        AND NOT EXISTS (SELECT 1 FROM productFiles pf JOIN files f2 ON f2.id = pf.fileId
                        WHERE pf.productId = m.id AND f2.state != 'verified')
        """

    /// SQL condition on `offlineProducts p`: a partial download (`prepositionSeconds` in its
    /// options) whose every requested file is verified.
    static let partialDoneSQL = """
        json_extract(p.options, '$.prepositionSeconds') IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM downloads d JOIN files f3 ON f3.id = d.fileId
                        WHERE d.ownerKind = 'product' AND d.ownerId = p.token AND f3.state != 'verified')
        """

    /// SQL condition on `mediaItems m`: the product holds file `?` (main or listed).
    static let holdsFileSQL = "(m.fileId = ? OR EXISTS (SELECT 1 FROM productFiles pf WHERE pf.productId = m.id AND pf.fileId = ?))"

    /// The name a product gives `fileId` (`v0/seg002.ts`), nil for its main file.
    static func name(of fileId: Int64, productId: String, db: Database) throws -> String? {
        try String.fetchOne(db, sql: "SELECT name FROM productFiles WHERE productId = ? AND fileId = ?", arguments: [productId, fileId])
    }

    /// `offline.status` of a product with listed files: bytes and size over all its files,
    /// `files {done,total}` (every file, the main one included), `segments {done,total}`
    /// (segments and init sections) and `images` (paths relative to the state directory) when it
    /// has any, and `progress`.
    ///
    /// Until every file's `GET` told its size (`sizeKnown` false), `sizeBytes` counts the files
    /// of unknown size for what the product's `UnknownSizes` (in `options`) expects of them, and
    /// `progress` counts files: done of total for a presentation (its segments), bytes of that
    /// estimated size for a single file with images, short of 100 until the product is complete.
    /// Once all sizes are known, both are exact bytes.
    static func statusFields(productId: String, mainFileId: Int64?, mainBytes: Int64? = nil, db: Database) throws -> [String: JSONValue]? {
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT pf.name, pf.role, f.state, f.bytesOnDisk, f.sizeBytes, f.localPath FROM productFiles pf JOIN files f ON f.id = pf.fileId
                WHERE pf.productId = ? ORDER BY pf.position
                """, arguments: [productId])
        guard !rows.isEmpty else { return nil }
        var bytes: Int64 = 0
        var size: Int64 = 0
        var unknown = 0
        var filesDone = 0, filesTotal = 0
        func count(state: String, sizeBytes: Int64?, bytesOnDisk: Int64?) {
            filesTotal += 1
            if state == "verified" { filesDone += 1 }
            guard let sizeBytes else {
                unknown += 1
                bytes += bytesOnDisk ?? 0
                return
            }
            size += sizeBytes
            bytes += state == "verified" ? sizeBytes : (bytesOnDisk ?? 0)
        }
        if let mainFileId, let main = try Row.fetchOne(db, sql: "SELECT state, bytesOnDisk, sizeBytes FROM files WHERE id = ?", arguments: [mainFileId]) {
            // A running transfer's bytes as the ticker saw them: the catalog is written less often.
            let recorded: Int64? = main["bytesOnDisk"]
            count(state: main["state"], sizeBytes: main["sizeBytes"], bytesOnDisk: mainBytes.map { max($0, recorded ?? 0) } ?? recorded)
        }
        var done = 0, total = 0
        var images: [String: JSONValue] = [:]
        for row in rows {
            let state: String = row["state"]
            count(state: state, sizeBytes: row["sizeBytes"], bytesOnDisk: row["bytesOnDisk"])
            let role: String = row["role"]
            if role == "segment" || role == "init" {
                total += 1
                if state == "verified" { done += 1 }
            }
            if role == "image", state == "verified" {
                let image = ProductImages.entry(name: row["name"], localPath: row["localPath"])
                images[image.kind] = .string(image.path)
            }
        }
        if unknown > 0 { size += try unknownSizes(productId: productId, db: db).bytes(unknown: unknown) }
        let progress: Int64
        if unknown == 0 {
            progress = size > 0 ? min(100, bytes * 100 / size) : 0
        } else if total > 0 {
            progress = Int64(filesDone * 100 / max(1, filesTotal))
        } else {
            progress = size > 0 ? min(99, bytes * 100 / size) : 0
        }
        var fields: [String: JSONValue] = [
            "bytesOnDisk": .number(Double(bytes)), "sizeBytes": .number(Double(size)),
            "sizeKnown": .bool(unknown == 0), "progress": .number(Double(progress)),
            "files": ["done": .number(Double(filesDone)), "total": .number(Double(filesTotal))],
        ]
        if total > 0 { fields["segments"] = ["done": .number(Double(done)), "total": .number(Double(total))] }
        if !images.isEmpty { fields["images"] = .object(images) }
        return fields
    }

    /// What the product's files of unknown size are expected to hold, as `offline.add` kept it
    /// (the latest request's); a guess per file for a product that kept none (a progressive
    /// product's images).
    static func unknownSizes(productId: String, db: Database) throws -> UnknownSizes {
        let options = try String.fetchOne(
            db,
            sql: """
                SELECT options FROM offlineProducts WHERE productId = ? AND options IS NOT NULL ORDER BY requestedAt DESC LIMIT 1
                """, arguments: [productId])
        return UnknownSizes(options: options.flatMap { try? JSONValue.parse(Array($0.utf8)) }) ?? UnknownSizes(bytes: 0, files: 0)
    }

    /// SQL: what the storage admission counts a file `f` for, its size or, while no `GET` told
    /// it, what a product that wants it expects of each of its files of unknown size
    /// (`UnknownSizes`; at least a byte, so that a full cache refuses it), else
    /// `PlannedFile.guessedBytes`.
    static let admittedSizeSQL = """
        COALESCE(f.sizeBytes,
                 MAX(1, (SELECT CAST(json_extract(p.options, '$.estimate.bytes') / json_extract(p.options, '$.estimate.files') AS INTEGER)
                         FROM downloads o JOIN offlineProducts p ON p.token = o.ownerId
                         WHERE o.fileId = f.id AND o.ownerKind = 'product' AND json_extract(p.options, '$.estimate.files') > 0 LIMIT 1)),
                 \(PlannedFile.guessedBytes))
        """

    /// Adds content keys to a license already held (a preloaded license that did not carry every
    /// key the playlists name).
    static func addKeys(_ keys: [String: [UInt8]], licenseId: String, db: Database) throws {
        guard !keys.isEmpty else { return }
        let current = try Data.fetchOne(db, sql: "SELECT keys FROM licenses WHERE id = ?", arguments: [licenseId])
        var object = current.flatMap { try? JSONValue.parse(Array($0)) }?.objectValue ?? [:]
        for (keyId, key) in keys { object[keyId] = .string(Data(key).base64EncodedString()) }
        try db.execute(sql: "UPDATE licenses SET keys = ? WHERE id = ?", arguments: [Data(JSONValue.object(object).serialized()), licenseId])
    }

    /// The key ids the license holds.
    static func keyIds(licenseId: String, db: Database) throws -> Set<String> {
        let current = try Data.fetchOne(db, sql: "SELECT keys FROM licenses WHERE id = ?", arguments: [licenseId])
        return Set(current.flatMap { try? JSONValue.parse(Array($0)) }?.objectValue?.keys ?? [:].keys)
    }
}
