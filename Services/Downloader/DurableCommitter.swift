import Foundation
import GRDB

/// Makes completed downloads permanent, several at a time (group commit), in the only safe
/// order (CATALOG-CONTRACT):
///
/// 1. the bytes are in `<path>.part` and were verified (size + SHA-256) by `FileTransfer`;
/// 2. **fsync the data** — one `syncfs` for a batch, `fsync` for a lone file — so the final
///    name can never point at blocks that were not written;
/// 3. **rename** `.part` → final name: atomic, a reader sees the old or the new entry;
/// 4. **fsync the directory**, once per batch, so the rename survives a power cut;
/// 5. only then **the catalog** says `verified`, in one transaction for the whole batch.
///
/// A crash between 4 and 5 leaves a final-named file whose row is not verified; `Reconciler`
/// renames it back to `.part`, and the next attempt re-verifies it without downloading.
actor DurableCommitter {
    private struct Waiter {
        var job: FileJob
        var continuation: CheckedContinuation<Void, Error>
    }

    private let store: MediaStore
    private let catalog: DatabasePool
    private var waiting: [Waiter] = []
    private var draining = false
    /// Batches at least this big are flushed with one `syncfs` rather than an fsync per file.
    static let syncfsThreshold = 4

    init(store: MediaStore, catalog: DatabasePool) {
        self.store = store
        self.catalog = catalog
    }

    /// Returns once the file is renamed, durable and marked verified in the catalog.
    func commit(_ job: FileJob) async throws {
        try await withCheckedThrowingContinuation { continuation in
            waiting.append(Waiter(job: job, continuation: continuation))
            if !draining {
                draining = true
                Task { await self.drain() }
            }
        }
    }

    /// Commits whatever is waiting, then whatever arrived meanwhile: files completing during a
    /// batch's fsync ride on the next one instead of each paying for its own.
    private func drain() async {
        while !waiting.isEmpty {
            let batch = waiting
            waiting = []
            let jobs = batch.map(\.job)
            let result = Result { try Self.persist(jobs, store: store, catalog: catalog) }
            for waiter in batch {
                waiter.continuation.resume(with: result)
            }
        }
        draining = false
    }

    private static func persist(_ jobs: [FileJob], store: MediaStore, catalog: DatabasePool) throws {
        let paths = try jobs.map { (part: try store.partPath($0.relative), final: try store.absolute($0.relative)) }
        // Step 2: data to disk before any rename.
        if jobs.count >= syncfsThreshold {
            try MediaStore.syncFileSystem(of: store.root)
        } else {
            for path in paths { try MediaStore.fsyncFile(path.part) }
        }
        // Step 3: the atomic switch to the final name.
        for path in paths { try MediaStore.rename(path.part, to: path.final) }
        // Step 4: the directory entries, once per directory.
        for directory in Set(paths.map { ($0.final as NSString).deletingLastPathComponent }) {
            try MediaStore.fsyncDirectory(directory)
        }
        // Step 5: the catalog, last; synchronous=FULL makes the commit itself durable.
        let now = Date()
        try catalog.write { db in
            for job in jobs {
                try db.execute(sql: """
                    UPDATE files SET state = 'verified', bytesOnDisk = sizeBytes, completedAt = ?, error = NULL, reason = NULL
                    WHERE id = ?
                    """, arguments: [now, job.fileId])
            }
        }
    }
}
