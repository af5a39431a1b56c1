import Catalog
import Foundation
import GRDB

/// What choosing a product's source reads from the catalog: its offline state and local file
/// (through `OfflineAvailability`, as the downloader answers `offline.state`), and how its
/// download stands.
struct SourceStore: Sendable {
    let catalog: Catalog

    /// The product's offline state at the time `now` gives (read in the same transaction),
    /// its local file if the catalog names one, and that file's download status.
    func lookup(productId: String, now: @escaping @Sendable (Database) throws -> Date) async throws
        -> (OfflineAvailability.State, OfflineAvailability.LocalFile?, SourceResolver.DownloadStatus?) {
        try await catalog.read { db in
            let local = try OfflineAvailability.localFile(productId: productId, db: db)
            return (try OfflineAvailability.state(productId: productId, db: db, now: now(db)), local,
                    try local.map { try Self.downloadStatus(of: $0, requestedProductId: productId, db: db) })
        }
    }

    private static func downloadStatus(of local: OfflineAvailability.LocalFile, requestedProductId: String,
                                       db: Database) throws -> SourceResolver.DownloadStatus {
        let productState = try String.fetchOne(db, sql: """
            SELECT state FROM offlineProducts WHERE requestedProductId = ? OR productId = ?
            ORDER BY requestedAt DESC LIMIT 1
            """, arguments: [requestedProductId, local.actualProductId])
        return .init(fileState: local.fileState, bytesOnDisk: local.bytesOnDisk, productState: productState)
    }

    /// What a growing file's reader needs to know at the written end.
    /// Called on the decode thread (a dedicated thread), hence the blocking read.
    func progress(relativePath: String) -> GrowingFileSource.Progress {
        do {
            return try catalog.readBlocking { db in
                guard let file = try Row.fetchOne(db, sql: "SELECT * FROM files WHERE localPath = ?", arguments: [relativePath]) else {
                    return .failed(.downloadFailed(name: nil, message: "the download of \(relativePath) was removed"))
                }
                let state: String = file["state"]
                if state == "verified" { return .complete }
                let product = try Row.fetchOne(db, sql: """
                    SELECT p.state, p.error, p.reason FROM offlineProducts p JOIN mediaItems m ON m.id = p.productId
                    JOIN files f ON f.id = m.fileId WHERE f.localPath = ? ORDER BY p.requestedAt DESC LIMIT 1
                    """, arguments: [relativePath])
                let productState: String? = product?["state"]
                if state == "corrupt" || productState == "failed" || productState == "deleted" {
                    let name: String? = file["error"] ?? product?["error"]
                    let reason: String? = file["reason"] ?? product?["reason"]
                    return .failed(.downloadFailed(
                        name: name, message: "the download of \(relativePath) failed\(reason.map { ": \($0)" } ?? "")"))
                }
                return .downloading
            }
        } catch {
            // The catalog is momentarily unreadable: keep waiting rather than fail the playback.
            return .downloading
        }
    }
}
