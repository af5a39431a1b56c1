import Catalog
import Foundation
import GRDB
import Glibc
import Logging
import Wire

/// Makes the catalog and the media directory agree, at every start, before any download runs
/// (Brightcove warns that the OS or a person may delete offline files):
///
/// - a verified file that is missing or of the wrong size stops being playable: its row goes
///   back to pending, its owners say so (`FileMissing`) in status and an `ItemStateChanged`
///   event, and it is queued again when `requeueMissing` allows;
/// - an unfinished file's `bytesOnDisk` is set to what its `.part` really holds, which is what
///   the next `Range` request resumes from;
/// - a final-named file whose row is not verified (a crash between rename and catalog update)
///   is renamed back to `.part`, to be re-verified without downloading it again;
/// - files the catalog does not know are removed.
struct Reconciler {
    let catalog: Catalog
    let store: MediaStore
    let events: DownloaderEvents
    let settings: DownloaderSettings
    let logger: Logger

    struct Report: Sendable, Equatable {
        var missing: [String] = []
        var resumable = 0
        var orphansRemoved: [String] = []
    }

    @discardableResult
    func run() throws -> Report {
        var report = Report()
        let now = Date()
        let files = try catalog.readBlocking { db in
            try Row.fetchAll(db, sql: "SELECT id, localPath, sizeBytes, state FROM files")
        }
        var known = Set<String>()
        var missingIds: [Int64] = []
        var partial: [(Int64, Int64)] = []
        for row in files {
            let id: Int64 = row["id"]
            let relative: String = row["localPath"]
            let size: Int64? = row["sizeBytes"]
            let state: String = row["state"]
            guard let final = try? store.absolute(relative) else {
                logger.error("catalog file \(id) has an unusable path \(relative.debugDescription); it will be fetched again")
                missingIds.append(id)
                continue
            }
            known.insert(relative)
            known.insert(relative + MediaStore.partSuffix)
            let part = final + MediaStore.partSuffix
            if state == "verified" {
                if let onDisk = MediaStore.size(final), onDisk == size {
                    unlink(part)
                    continue
                }
                logger.warning("\(relative) is missing or has the wrong size; it is no longer playable offline")
                unlink(final)
                unlink(part)
                missingIds.append(id)
                report.missing.append(relative)
            } else {
                if MediaStore.size(final) != nil {
                    // Renamed but the catalog never heard: verify again from the bytes we have.
                    unlink(part)
                    try? MediaStore.rename(final, to: part)
                }
                var onDisk = MediaStore.size(part) ?? 0
                if let size, onDisk > size {
                    unlink(part)
                    onDisk = 0
                }
                if onDisk > 0 { report.resumable += 1 }
                partial.append((id, onDisk))
            }
        }
        let affected = try catalog.writeBlocking { db -> [(kind: String, owner: String, item: String)] in
            for (id, onDisk) in partial {
                try db.execute(sql: """
                    UPDATE files SET bytesOnDisk = ?, state = CASE WHEN ? > 0 THEN 'partial' WHEN state = 'corrupt' THEN 'corrupt' ELSE 'pending' END
                    WHERE id = ?
                    """, arguments: [onDisk, onDisk, id])
            }
            var affected: [(kind: String, owner: String, item: String)] = []
            for id in missingIds {
                try db.execute(sql: """
                    UPDATE files SET state = 'pending', bytesOnDisk = 0, attempts = 0, completedAt = NULL,
                    error = 'FileMissing', reason = 'the file was deleted or changed outside Cassette' WHERE id = ?
                    """, arguments: [id])
                try db.execute(sql: "UPDATE downloads SET state = ?, updatedAt = ? WHERE fileId = ? AND state IN ('done', 'failed')",
                               arguments: [settings.requeueMissing ? "queued" : "failed", now, id])
                for row in try Row.fetchAll(db, sql: """
                    SELECT p.token, p.productId FROM offlineProducts p JOIN mediaItems m ON m.id = p.productId
                    WHERE m.fileId = ? AND p.state = 'cached'
                    """, arguments: [id]) {
                    try db.execute(sql: "UPDATE offlineProducts SET state = ?, error = 'FileMissing', reason = ?, endedAt = NULL WHERE token = ?",
                                   arguments: [settings.requeueMissing ? "queued" : "failed",
                                               "the file was deleted outside Cassette; " + (settings.requeueMissing ? "downloading it again" : "offline.resume fetches it again"),
                                               row["token"] as String])
                    affected.append(("product", row["token"], row["productId"]))
                }
                for row in try Row.fetchAll(db, sql: """
                    SELECT si.stationId, si.itemId FROM stationItems si JOIN mediaItems m ON m.id = si.itemId WHERE m.fileId = ?
                    """, arguments: [id]) {
                    affected.append(("station", row["stationId"], row["itemId"]))
                }
            }
            return affected
        }
        for entry in affected {
            var data: [String: Wire.JSONValue] = ["state": settings.requeueMissing ? "queued" : "failed", "error": "FileMissing",
                                                  "reason": "the file was deleted or changed outside Cassette"]
            if entry.kind == "product" {
                data["token"] = .string(entry.owner)
                data["productId"] = .string(entry.item)
            } else {
                data["stationId"] = .string(entry.owner)
                data["itemId"] = .string(entry.item)
            }
            events.downloads("ItemStateChanged", data)
        }
        for relative in store.listFiles() where !known.contains(relative) {
            logger.info("removing \(relative): not in the catalog")
            unlink(store.root + "/" + relative)
            report.orphansRemoved.append(relative)
        }
        return report
    }
}
