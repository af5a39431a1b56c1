import Logging
import Systemd

/// The download engine's listener: what each transfer means for the policy (an origin that
/// failed waits, a full disk waits), the products and the stations, and a re-offline waiting
/// for a staged file (`stagedVerified`, which the re-validator follows).
struct TransferOutcomes: TransferListener {
    let products: ProductTransfers
    let stations: StationProgress
    let gate: PolicyGate
    let stagedVerified: AsyncStream<Int64>.Continuation
    let logger: Logger

    func starting(_ job: FileJob, mayHaveChanged: Bool) async -> (owners: [ProductRef], probe: Bool) {
        // A retry after the origin failed this file keeps its items `idle` with the origin's
        // error until bytes arrive again: a probe of a dead origin is not a download. So does a
        // file of a product the origin's failure left `idle` (another of its files failed).
        guard !gate.originFailedBefore(job.fileId) else { return ([], true) }
        let (owners, held) = await products.start(job, mayHaveChanged: mayHaveChanged, keepOriginWaits: true)
        return (owners, held)
    }

    func flowingAgain(_ job: FileJob) async -> [ProductRef] {
        if gate.originFailedBefore(job.fileId) { await products.clearOriginWait(job) }
        let owners = await products.start(job, mayHaveChanged: true, keepOriginWaits: false).owners
        gate.originAnswered(job.fileId)
        return owners
    }

    func progressed(_ job: FileJob, bytes: Int64, owners: [ProductRef]) async {
        await products.progressed(job, bytes: bytes, owners: owners)
    }

    func ended(_ job: FileJob, _ outcome: FileOutcome) async {
        await gate.transferEnded(job, outcome)
        switch outcome {
        case .verified(let verified):
            logger.info(
                "downloaded and verified",
                metadata: LogMessageID.itemCompleted.metadata(
                    ["file": "\(job.relative)", "bytes": "\(job.sizeBytes)"]))
            products.verified(verified)
            await stations.filesVerified(verified.stations)
            if verified.staged { stagedVerified.yield(job.fileId) }
        case .failed(let failure, _):
            let about: Logger.Metadata = [
                "file": "\(job.relative)", "attempt": "\(failure.attempts) of \(failure.maxAttempts)",
                "error": "\(failure.error)", "reason": "\(failure.reason)",
            ]
            if failure.isFinal {
                logger.error("download failed for good; giving up", metadata: LogMessageID.itemFailed.metadata(about))
            } else {
                logger.warning("download failed; it will be tried again", metadata: about)
            }
            products.failed(failure)
            await stations.attemptFailed(failure)
        case .interrupted:
            break
        }
    }

    func drained() async { await stations.flush() }
}
