import Foundation
import GRDB

/// The start-up reconcile's catalog side (`Reconciler`, on the blocking pool): it reads the
/// files and writes its repairs inside its own `readBlocking`/`writeBlocking`.
extension FileStore {
    /// A `files` row as the reconcile compares it with the media directory.
    struct StoredFile: Sendable {
        var id: Int64
        var localPath: String
        var sizeBytes: Int64?
        var state: String
    }

    /// Whose item a missing file was: a product token, or a station's item.
    struct MissingFileOwner: Sendable {
        enum Kind: Sendable { case product, station }
        var kind: Kind
        /// The token, or the station id.
        var owner: String
        /// The product id, or the item id.
        var item: String
    }

    static func allFiles(db: Database) throws -> [StoredFile] {
        try Row.fetchAll(db, sql: "SELECT id, localPath, sizeBytes, state FROM files")
            .map { StoredFile(id: $0["id"], localPath: $0["localPath"], sizeBytes: $0["sizeBytes"], state: $0["state"]) }
    }

    /// Records what the media directory really holds, in one transaction: unfinished files get
    /// the size of their `.part` (`partial`: file id and bytes); verified files found missing or
    /// changed (`missing`) go back to pending with `FileMissing`, their requests and cached
    /// products queued again (`requeueMissing`) or failed. Returns the owners of the missing files.
    static func recordReconcile(
        partial: [(Int64, Int64)], missing: [Int64], requeueMissing: Bool, now: Date,
        db: Database
    ) throws -> [MissingFileOwner] {
        for (id, onDisk) in partial {
            try db.execute(
                sql: """
                    UPDATE files SET bytesOnDisk = ?, state = CASE WHEN ? > 0 THEN 'partial' WHEN state = 'corrupt' THEN 'corrupt' ELSE 'pending' END
                    WHERE id = ?
                    """, arguments: [onDisk, onDisk, id])
        }
        var affected: [MissingFileOwner] = []
        for id in missing {
            try db.execute(
                sql: """
                    UPDATE files SET state = 'pending', bytesOnDisk = 0, attempts = 0, completedAt = NULL,
                    error = 'FileMissing', reason = 'the file was deleted or changed outside Cassette' WHERE id = ?
                    """, arguments: [id])
            try db.execute(
                sql: "UPDATE downloads SET state = ?, updatedAt = ? WHERE fileId = ? AND state IN ('done', 'failed')",
                arguments: [requeueMissing ? "queued" : "failed", now.databaseText, id])
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT p.token, p.productId FROM offlineProducts p JOIN mediaItems m ON m.id = p.productId
                    WHERE \(ProductFileStore.holdsFileSQL) AND p.state IN ('cached', 'partiallyCached')
                    """, arguments: [id, id])
            {
                try db.execute(
                    sql: "UPDATE offlineProducts SET state = ?, error = 'FileMissing', reason = ?, endedAt = NULL WHERE token = ?",
                    arguments: [
                        requeueMissing ? "queued" : "failed",
                        "the file was deleted outside Cassette; " + (requeueMissing ? "downloading it again" : "offline.resume fetches it again"),
                        row["token"] as String,
                    ])
                affected.append(MissingFileOwner(kind: .product, owner: row["token"], item: row["productId"]))
            }
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT si.stationId, si.itemId FROM stationItems si JOIN mediaItems m ON m.id = si.itemId WHERE m.fileId = ?
                    """, arguments: [id])
            {
                affected.append(MissingFileOwner(kind: .station, owner: row["stationId"], item: row["itemId"]))
            }
        }
        return affected
    }
}
