import BlockingIO
import Foundation
import NIOConcurrencyHelpers
import NIOPosix
import StateDB

/// Makes completed downloads permanent, several at a time (group commit), in the only safe
/// order (docs/catalog.md):
///
/// 1. the bytes are in `<path>.part` and were verified (size + SHA-256) by `FileTransfer`;
/// 2. **fsync the data** of every file of the batch, so the final name can never point at
///    blocks that were not written: each file's writeback was started by its transfer
///    (`sync_file_range`: every 8 MiB while it arrived, the rest when its body ended), then
///    they are fsynced on several threads at once (each fsync also waits for the file's
///    inode to be written: one by one, those waits add up), so the disk takes them together
///    and the transfers' slots were free again as soon as their bytes arrived; the fsyncs
///    find little left to write. `syncfs` is not used:
///    it also flushes every other program's dirty data on the file system, which on a busy
///    device costs more than it saves (measured: cassette-bench download);
/// 3. **rename** `.part` → final name: atomic, a reader sees the old or the new entry;
/// 4. **fsync the directory**, once per batch, so the rename survives a power cut;
/// 5. only then **the catalog** says `verified`, its requests `done` and the products waiting
///    for it `cached`, in one transaction for the whole batch.
///
/// The disk work runs on a thread of its own, never on the Swift concurrency pool (a blocked
/// pool thread would stall every transfer's bookkeeping on a two-core device); files that
/// complete during a batch's fsync ride on the next batch.
///
/// Not an actor: a file joins the commit thread's queue (an `OrderedWorker` taking everything
/// waiting as one batch) from its caller's executor, and the commit thread answers each caller
/// directly, so a file costs no hop to a committer actor and back (a station of small files
/// paid two thread hand-offs per file for that).
///
/// A crash between 4 and 5 leaves a final-named file whose row is not verified; `Reconciler`
/// renames it back to `.part`, and the next attempt re-verifies it without downloading.
final class DurableCommitter: Sendable {
    /// What the commit changed for one file, for the events of its owners (`TransferListener`).
    typealias Verified = DownloadQueueStore.Verified

    private struct Waiter {
        var job: FileJob
        var continuation: CheckedContinuation<Verified, Error>
    }

    private let worker: OrderedWorker<Waiter>
    /// Threads that only fsync, for the files of a batch at once; started on first use.
    private static let fsyncThreads: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: 8)
        pool.start()
        return pool
    }()

    init(store: MediaFolder, catalog: StateDB) {
        // Every file waiting when the thread comes back is one batch: files that complete
        // during a batch's fsync ride on the next one instead of each paying for its own.
        worker = OrderedWorker(name: "cassette-commit", maxBatch: .max, startsLazily: true) { batch in
            let result = Result { try Self.persist(batch.map(\.job), store: store, catalog: catalog) }
            for waiter in batch {
                waiter.continuation.resume(with: result.map { $0[waiter.job.fileId] ?? Verified() })
            }
        }
    }

    /// Returns once the file is renamed, durable and marked verified in the catalog.
    nonisolated(nonsending)
        func commit(_ job: FileJob) async throws -> Verified
    {
        try await withCheckedThrowingContinuation { continuation in
            worker.submit(Waiter(job: job, continuation: continuation))
        }
    }

    /// Step 2 of a batch: the fsyncs spread over `fsyncThreads` (the transfers started each
    /// file's writeback), waited for here (on the commit thread, which blocks by design).
    private static func fsyncAll(_ paths: [String]) throws {
        guard paths.count > 1 else { return try paths.forEach(MediaFolder.fsyncFile) }
        let lanes = min(paths.count, 8)
        let done = DispatchGroup()
        let failures = NIOLockedValueBox<[Error]>([])
        for lane in 0..<lanes {
            let mine = stride(from: lane, to: paths.count, by: lanes).map { paths[$0] }
            done.enter()
            fsyncThreads.submit { _ in
                defer { done.leave() }
                do { try mine.forEach(MediaFolder.fsyncFile) } catch { failures.withLockedValue { $0.append(error) } }
            }
        }
        done.wait()
        if let first = failures.withLockedValue({ $0.first }) { throw first }
    }

    private static func persist(_ jobs: [FileJob], store: MediaFolder, catalog: StateDB) throws -> [Int64: Verified] {
        let paths = try jobs.map { (part: try store.partPath($0.relative), final: try store.absolute($0.relative)) }
        // Step 2: data to disk before any rename.
        try fsyncAll(paths.map(\.part))
        // Step 3: the atomic switch to the final name.
        for path in paths { try MediaFolder.rename(path.part, to: path.final) }
        // Step 4: the directory entries, once per directory.
        for directory in Set(paths.map { ($0.final as NSString).deletingLastPathComponent }) {
            try MediaFolder.fsyncDirectory(directory)
        }
        // Step 5: the catalog, last; synchronous=FULL makes the commit itself durable.
        let now = Date()
        let fileIds = jobs.map(\.fileId)
        let sizes = Dictionary(jobs.map { ($0.fileId, $0.sizeBytes) }, uniquingKeysWith: { _, last in last })
        return try catalog.writeBlocking { db in try DownloadQueueStore.markVerified(fileIds, sizes: sizes, now: now, db: db) }
    }
}
