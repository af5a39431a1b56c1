import Foundation
import Logging
import NIOConcurrencyHelpers

/// One file's transfer, check and commit, and the record of how it ended (a failed attempt
/// counted, an interruption's bytes kept). It runs on the engine's actor (`run(on:)`), which
/// it tells of the body arriving and of stalls; which file runs when is the engine's.
struct FileRun: Sendable {
    let store: MediaFolder
    let transfer: FileTransfer
    let committer: DurableCommitter
    let queue: DownloadQueueStore
    let listener: any TransferListener
    let ticker: ProgressTicker
    let maxAttempts: Int
    let logger: Logger

    /// Transfers and commits one file: the job as it ended (a file of unknown size keeps the
    /// length its `GET` announced) and the outcome, nil when it could not be recorded.
    func run(_ job: FileJob, follow: ProgressTicker.Follow, attempt: Int, on engine: isolated DownloadEngine) async
        -> (FileJob, FileOutcome?)
    {
        do {
            let result: TransferResult
            do {
                // A size learned is handed to `bodyArrived` too, which may run first.
                let learned = NIOLockedValueBox<Int64?>(nil)
                result = try await transfer.run(
                    job, onBytes: { bytes in follow.note(bytes) },
                    onReceived: {
                        let size = learned.withLockedValue { $0 }
                        Task { await engine.bodyArrived(job.fileId, attempt: attempt, learned: size) }
                    },
                    onSizeLearned: { size in
                        learned.withLockedValue { $0 = size }
                        Task { await engine.sizeLearned(job.fileId, size) }
                    })
            } catch {
                engine.transferEnded(follow, attempt: attempt)
                throw error
            }
            engine.transferEnded(follow, attempt: attempt)
            ticker.remove(job.fileId)
            switch result {
            case .complete(let sizeBytes):
                // Bytes came, maybe between two looks of the ticker: a probe's owners are downloading.
                if follow.probing { _ = await listener.flowingAgain(job) }
                engine.bodyComplete(job, sizeBytes: sizeBytes)
                var done = job
                (done.sizeBytes, done.sizeIsEstimate) = (sizeBytes, false)
                let verified = try await committer.commit(done)
                engine.clearStalls(job.fileId)
                return (done, .verified(verified))
            case .refused(let error, let reason):
                engine.clearStalls(job.fileId)
                return (job, await attemptFailed(job, error: error, reason: reason, byOrigin: true, engine: engine))
            case .originFailing(let error, let reason):
                await noteInterrupted(job)
                return (job, .interrupted(.originFailing(error: error, reason: reason)))
            }
        } catch {
            ticker.remove(job.fileId)
            if Task.isCancelled || error is CancellationError, let stall = engine.stalled(job.fileId, attempt: attempt) {
                // Recorded from a task of its own: this one was cancelled to stop the transfer.
                await Task { await self.noteInterrupted(job) }.value
                return (job, .interrupted(.stalled(times: stall.times, reason: stall.reason)))
            } else if Task.isCancelled || error is CancellationError {
                await noteInterrupted(job)
                return (job, .interrupted(.stopped))
            } else if let shortage = error as? StorageShortage {
                await noteInterrupted(job)
                return (job, .interrupted(.noSpace(shortage)))
            }
            return (job, await attemptFailed(job, error: "StorageError", reason: "\(error)", byOrigin: false, engine: engine))
        }
    }

    /// Counts a failed attempt; products that fail for good with it stop their other transfers.
    private func attemptFailed(_ job: FileJob, error: String, reason: String, byOrigin: Bool, engine: isolated DownloadEngine) async
        -> FileOutcome?
    {
        do {
            let failure = try await queue.recordFailedAttempt(
                fileId: job.fileId, error: error, reason: reason,
                maxAttempts: maxAttempts, now: Date())
            if !failure.products.isEmpty { await engine.dropUnwanted() }
            return .failed(failure, byOrigin: byOrigin)
        } catch {
            logger.error("cannot record the failure of \(job.relative): \(error)")
            return nil
        }
    }

    /// A stopped transfer: the catalog learns how many bytes the `.part` keeps.
    private func noteInterrupted(_ job: FileJob) async {
        let onDisk = await store.partSize(job.relative)
        _ = try? await queue.recordInterrupted(fileId: job.fileId, bytesOnDisk: onDisk)
    }
}
