import Foundation
import Glibc
import Logging
import StateDB
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
    let catalog: StateDB
    let store: MediaFolder
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
        let files = try catalog.readBlocking { db in try FileStore.allFiles(db: db) }
        var known = Set<String>()
        var missingIds: [Int64] = []
        var partial: [(Int64, Int64)] = []
        for file in files {
            let (id, relative, size, state) = (file.id, file.localPath, file.sizeBytes, file.state)
            guard let final = try? store.absolute(relative) else {
                logger.error("catalog file \(id) has an unusable path \(relative.debugDescription); it will be fetched again")
                missingIds.append(id)
                continue
            }
            known.insert(relative)
            known.insert(relative + MediaFolder.partSuffix)
            let part = final + MediaFolder.partSuffix
            if state == "verified" {
                if let onDisk = MediaFolder.size(final), onDisk == size {
                    unlink(part)
                    continue
                }
                logger.warning("\(relative) is missing or has the wrong size; it is no longer playable offline")
                unlink(final)
                unlink(part)
                missingIds.append(id)
                report.missing.append(relative)
            } else {
                if MediaFolder.size(final) != nil {
                    // Renamed but the catalog never heard: verify again from the bytes we have.
                    unlink(part)
                    try? MediaFolder.rename(final, to: part)
                }
                var onDisk = MediaFolder.size(part) ?? 0
                if let size, onDisk > size {
                    unlink(part)
                    onDisk = 0
                }
                if onDisk > 0 { report.resumable += 1 }
                partial.append((id, onDisk))
            }
        }
        let affected = try catalog.writeBlocking { db in
            try FileStore.recordReconcile(partial: partial, missing: missingIds, requeueMissing: settings.requeueMissing, now: now, db: db)
        }
        for entry in affected {
            let item: DownloaderEvent.DownloadItem =
                entry.kind == .product
                ? .product(ProductRef(token: entry.owner, productId: entry.item))
                : .stationItem(stationId: entry.owner, itemId: entry.item)
            events.publish(
                .itemStateChanged(
                    item, state: settings.requeueMissing ? "queued" : "failed",
                    error: ItemError.fileMissing.rawValue, reason: "the file was deleted or changed outside Cassette"))
        }
        for relative in store.listFiles() where !known.contains(relative) {
            logger.info("removing \(relative): not in the catalog")
            unlink(store.root + "/" + relative)
            report.orphansRemoved.append(relative)
        }
        return report
    }
}
