/// How one transfer ended, as the engine reports it to its `TransferListener`.
enum FileOutcome: Sendable {
    /// The file is durable and verified; what that completed, as the catalog says.
    case verified(DownloadQueueStore.Verified)
    /// An attempt counted against the file: the origin refused it (`byOrigin`) or it could not
    /// be stored. What failed for good with it, as the catalog recorded it.
    case failed(DownloadQueueStore.FailedAttempt, byOrigin: Bool)
    /// The transfer stopped before its end; its `.part` keeps what arrived.
    case interrupted(Interruption)
}

/// Why a transfer stopped before its end.
enum Interruption: Sendable {
    /// Nobody wants the file any more (paused, cancelled, removed) or the service stops.
    case stopped
    /// The origin gave no answer or a server error, after the transfer's own quick retries.
    case originFailing(error: String, reason: String)
    /// The slot watch took its slot (no data, or a trickle while other files wait), the
    /// `times`-th time in a row.
    case stalled(times: Int, reason: String)
    /// The disk refused the bytes.
    case noSpace(StorageShortage)
}

/// Whoever turns transfers into states and events: the downloader's products, stations and
/// policy (`TransferOutcomes`). The engine only schedules files and reports to it.
protocol TransferListener: Sendable {
    /// A transfer of `job` starts: the products that follow its progress, and whether it is a
    /// probe of an origin that failed this file before (its items stay `idle` until bytes flow).
    /// `mayHaveChanged`: the queue was read before something changed the wanted set.
    func starting(_ job: FileJob, mayHaveChanged: Bool) async -> (owners: [ProductRef], probe: Bool)
    /// Bytes flow again in a probe: the products that now follow its progress.
    func flowingAgain(_ job: FileJob) async -> [ProductRef]
    /// The file holds `bytes` on disk; `owners` as `starting` or `flowingAgain` said.
    func progressed(_ job: FileJob, bytes: Int64, owners: [ProductRef]) async
    /// The transfer ended so.
    func ended(_ job: FileJob, _ outcome: FileOutcome) async
    /// Nothing runs or waits any more: what was coalesced for later is due now.
    func drained() async
}
