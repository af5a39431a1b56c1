import Foundation
import GRDB
import StateDB

/// What choosing a product's source reads from the catalog: its offline state and local file
/// (through `OfflineAvailability`, as the downloader answers `offline.state`), and how its
/// download stands.
struct SourceStore: Sendable {
    let catalog: StateDB

    /// What the catalog holds of a product on the device.
    struct Lookup: Sendable {
        /// Whether it may be played from the device now, and until when.
        var window: PlayableWindow
        var state: OfflineAvailability.State { window.validity.state }
        /// Its local file, if the catalog names one.
        var local: OfflineAvailability.LocalFile?
        /// How that file's download stands.
        var download: SourceResolver.DownloadStatus?
        /// Its images on disk and the quality it was offlined at.
        var metadata = LocalMetadata()
    }

    /// What a product's copy on the device says beyond its `mediaItems` row.
    struct LocalMetadata: Sendable, Equatable {
        /// Kind → path relative to the state directory of each image verified on disk
        /// (`ProductImages`); empty when none is.
        var images: [String: String] = [:]
        /// `offlineProducts.quality` of the newest request: the quality asked of the origin when
        /// it was offlined; nil for a station item.
        var quality: String?
    }

    /// The product's validity at the time `now` gives (read in the same transaction),
    /// its local file if the catalog names one, that file's download status, and its images and
    /// offline quality.
    func lookup(productId: String, now: @escaping @Sendable (Database) throws -> Date) async throws -> Lookup {
        try await catalog.read { db in
            let window = try PlayableWindow.read(productId: productId, db: db, now: now(db))
            guard let local = try OfflineAvailability.localFile(productId: productId, db: db) else {
                return Lookup(window: window)
            }
            let request = try Row.fetchOne(
                db,
                sql: """
                    SELECT state, quality FROM offlineProducts WHERE requestedProductId = ? OR productId = ?
                    ORDER BY requestedAt DESC LIMIT 1
                    """, arguments: [productId, local.actualProductId])
            let download = SourceResolver.DownloadStatus(
                fileState: local.fileState, bytesOnDisk: local.bytesOnDisk,
                productState: request?["state"])
            let metadata = LocalMetadata(
                images: try ProductImages.onDisk(productId: local.actualProductId, db: db),
                quality: request?["quality"])
            return Lookup(window: window, local: local, download: download, metadata: metadata)
        }
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
                let product = try Row.fetchOne(
                    db,
                    sql: """
                        SELECT p.state, p.error, p.reason FROM offlineProducts p JOIN mediaItems m ON m.id = p.productId
                        JOIN files f ON f.id = m.fileId WHERE f.localPath = ? ORDER BY p.requestedAt DESC LIMIT 1
                        """, arguments: [relativePath])
                let productState: String? = product?["state"]
                if state == "corrupt" || productState == "failed" || productState == "deleted" {
                    let name: String? = file["error"] ?? product?["error"]
                    let reason: String? = file["reason"] ?? product?["reason"]
                    return .failed(
                        .downloadFailed(
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
