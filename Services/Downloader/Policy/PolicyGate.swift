import Foundation
import HTTPClient
import Logging
import OriginClient
import Pacing
import StateDB
import Synchronization
import Systemd
import Wire

/// The download engine asks this before starting each file whether the
/// policy lets it run now: the network verdict (with the per-item `allowCellular` override),
/// the download windows (with the per-item `now` exception, `DownloadWindows`), the waits
/// after a failing origin or a full disk, then the storage budget
/// (`StorageAdmission`, with eviction of heard station tracks when space is short). Files
/// that may not run leave their owners Idle with the reason (`CellularNotAllowed`,
/// `NoNetwork`, `OutsideDownloadWindow`, `CacheLimit`) and stay queued, so they start by themselves once allowed.
final class PolicyGate: Sendable {
    private struct State {
        var policy: DownloadPolicy
        var network: NetworkState
        /// The download windows' verdict as last looked at (`refreshWindow`).
        var window: DownloadWindows.State
        /// Files that hit a full disk while writing: not retried before this time, so a disk
        /// that statvfs calls roomy but refuses writes (quota, inodes) is not hammered.
        var spaceRetryAfter: [Int64: Date] = [:]
        /// Files whose origin failed (no connection, timeout, 5xx) or whose transfer stalled
        /// (`transferStalled`): not retried before `after`, which doubles with each failure in a
        /// row (`originRetryDelay`).
        var originRetry: [Int64: (after: Date, failures: Int)] = [:]
        /// Why downloads last waited, as logged: the same reason is logged again only after a minute.
        var lastWait: (why: String, at: Date)?
        /// The room the last admission round left once it reserved what it admitted.
        var roomLeft: Int64 = 0
    }

    private let state: Mutex<State>
    private let idle: IdleItemStore
    /// The disk side of admission: the budget, and eviction of heard station tracks.
    let storage: StorageAdmission
    var budget: StorageBudget { storage.budget }
    private let events: DownloaderEvents
    private let logger: Logger
    private let offlineSwitch: OfflineSwitch
    /// The rate every media transfer shares: the open window's limit or the policy's
    /// `maxBytesPerSecond`, set by `refreshWindow`.
    let receiveRate = ReceiveRate()
    static let spaceRetrySeconds: Double = 5

    init(
        catalog: StateDB, store: MediaFolder, events: DownloaderEvents, logger: Logger,
        policy: DownloadPolicy, network: NetworkState, offlineSwitch: OfflineSwitch
    ) {
        idle = IdleItemStore(catalog: catalog)
        let files = FileStore(catalog: catalog)
        self.events = events
        self.logger = logger
        storage = StorageAdmission(
            budget: StorageBudget(files: files, store: store), files: files, store: store,
            events: events, logger: logger)
        state = Mutex(State(policy: policy, network: network, window: policy.schedule.state(at: Date())))
        self.offlineSwitch = offlineSwitch
        offlineSwitch.set(policy.offlineMode)
        refreshWindow()
    }

    var policy: DownloadPolicy { state.withLock { $0.policy } }
    /// The room the last admission round left: files admitted ahead still fit as long as the
    /// running ones did not outgrow their admission by more (a file of unknown size, `FileJob.sizeIsEstimate`).
    var roomLeft: Int64 { state.withLock { $0.roomLeft } }
    var network: NetworkState { state.withLock { $0.network } }
    var verdict: NetworkVerdict { state.withLock { $0.policy.verdict(on: $0.network) } }

    func update(policy: DownloadPolicy) {
        state.withLock { $0.policy = policy }
        offlineSwitch.set(policy.offlineMode)
        refreshWindow()
    }
    func update(network: NetworkState) { state.withLock { $0.network = network } }

    /// Re-validation, station re-sync and prepositioning (background traffic) follow the global
    /// verdict only, and wait for a download window.
    var allowsBackgroundTraffic: Bool { verdict == .allowed && window.isOpen }

    // MARK: Download windows

    /// The download windows' verdict as last looked at (at most a second old).
    var window: DownloadWindows.State { state.withLock { $0.window } }

    /// Looks at the clock against the download windows (the enforcer, every second; a policy
    /// change) and sets the shared rate: the open window's limit, else the policy's.
    @discardableResult
    func refreshWindow(now: Date = Date()) -> DownloadWindows.State {
        let policy = self.policy
        let window = policy.schedule.state(at: now)
        state.withLock { $0.window = window }
        switch window {
        case .open(let limit, _): receiveRate.bytesPerSecond = limit
        case .closed: receiveRate.bytesPerSecond = policy.maxBytesPerSecond
        }
        return window
    }

    /// Files among `fileIds` some queued `offline.add` token asked for with `now: true`.
    func downloadNowFiles(_ fileIds: [Int64]) async -> Set<Int64> {
        guard !fileIds.isEmpty else { return [] }
        return (try? await idle.downloadNow(among: fileIds)) ?? []
    }

    /// A window opened: the items that waited for one go back to Queued.
    func releaseWindowIdle() async {
        let released = (try? await idle.releaseWindowIdle()) ?? []
        for product in released {
            events.publish(.itemStateChanged(.product(product), state: "queued"))
        }
    }

    /// Every window closed: what still waits for bytes goes Idle, but for `now` items.
    func idleOutsideWindow() async {
        let window = self.window
        guard !window.isOpen else { return }
        let waiting = (try? await idle.waitingFiles()) ?? []
        let exempt = await downloadNowFiles(waiting)
        await markIdle(waiting.filter { !exempt.contains($0) }, .outsideDownloadWindow, DownloadWindows.reason(window))
    }

    // MARK: Admission (asked by the engine, one round at a time)

    /// The candidates that may start now, at most `slots`, in order. `running` are the files
    /// already downloading, `ahead` those an earlier round admitted that wait for a slot: what
    /// they will still write is reserved before anything is admitted, and each admitted file's
    /// bytes are reserved before the next is considered.
    ///
    /// Up to `prefetch` more may follow the first `slots`, for the engine to start as slots free
    /// without another round: only while they fit as they are (no eviction for them), and one
    /// that does not fit ends the list without making anything wait.
    func admit(
        _ candidates: [FileJob], slots: Int, prefetch: Int = 0, running: [FileJob], ahead: [StorageBudget.AdmittedAhead] = []
    ) async -> [FileJob] {
        guard slots + prefetch > 0, !candidates.isEmpty else { return [] }
        var allowed = candidates
        switch verdict {
        case .allowed: break
        case .blocked(let block, let reason):
            await markIdle(candidates.map(\.fileId), block, reason)
            return []
        case .perItem(let block, let reason):
            let overridden = await cellularAllowedFiles(candidates.map(\.fileId))
            allowed = candidates.filter { overridden.contains($0.fileId) }
            await markIdle(candidates.map(\.fileId).filter { !overridden.contains($0) }, block, reason)
        }
        let window = self.window
        if !window.isOpen, !allowed.isEmpty {
            let exempt = await downloadNowFiles(allowed.map(\.fileId))
            await markIdle(allowed.map(\.fileId).filter { !exempt.contains($0) }, .outsideDownloadWindow, DownloadWindows.reason(window))
            allowed.removeAll { !exempt.contains($0.fileId) }
        }
        let now = Date()
        let (retryAfter, originWait) = state.withLock { s in
            s.spaceRetryAfter = s.spaceRetryAfter.filter { $0.value > now }
            return (s.spaceRetryAfter, s.originRetry.filter { $0.value.after > now })
        }
        allowed.removeAll { retryAfter[$0.fileId] != nil || originWait[$0.fileId] != nil }
        guard !allowed.isEmpty else { return [] }
        let (admitted, refused, left) = await storage.admit(
            allowed, slots: slots, prefetch: prefetch, running: running, ahead: ahead,
            protected: Set(running.map(\.fileId) + ahead.map(\.fileId) + candidates.map(\.fileId)),
            policy: policy)
        for (job, reason) in refused { await markIdle([job.fileId], .cacheLimit, reason) }
        state.withLock { $0.roomLeft = left }
        return admitted
    }

    /// What a transfer's end means for admission: an origin that answered starts its backoff
    /// over; a failing origin, a stall or a full disk make the file wait, its owners `idle`.
    func transferEnded(_ job: FileJob, _ outcome: FileOutcome) async {
        switch outcome {
        case .verified, .failed(_, byOrigin: true): originAnswered(job.fileId)
        case .failed, .interrupted(.stopped): break
        case .interrupted(.originFailing(let error, let reason)): await originFailed(job, error: error, reason: reason)
        case .interrupted(.stalled(let times, let reason)): await transferStalled(job, stalls: times, reason: reason)
        case .interrupted(.noSpace(let shortage)): await stoppedForSpace(job, shortage)
        }
    }

    /// A transfer stopped by a full disk (ENOSPC): its owners wait with CacheLimit.
    private func stoppedForSpace(_ job: FileJob, _ shortage: StorageShortage) async {
        state.withLock { $0.spaceRetryAfter[job.fileId] = Date().addingTimeInterval(Self.spaceRetrySeconds) }
        let reason = await storage.stoppedReason(job, shortage, policy: policy)
        logger.warning("download of \(job.relative) stopped: \(reason)")
        await markIdle([job.fileId], .cacheLimit, reason)
    }

    /// The errors of items waiting on a failing origin rather than on the policy.
    static let originWaitErrors = [PolicyBlock.networkError.rawValue, PolicyBlock.tlsFailed.rawValue, OriginError.unauthorizedName]

    /// At start: what waited on a failing origin in the last run is queued again.
    func releaseOriginWaits() async {
        do {
            _ = try await idle.releaseOriginWaits()
        } catch {
            logger.error("cannot queue again the items that waited on the origin: \(error)")
        }
    }

    /// 2, 4, 8, 16 s, then every 30 s.
    static let originBackoff = Backoff(initial: 2, cap: 30)

    /// The wait before retrying a file whose origin failed `failures` times in a row: 2, 4, 8,
    /// 16 s, then every 30 s, without end; no attempt is counted meanwhile. After a TLS failure
    /// (`TLSFailed`) no sooner than `RetryPolicy.tlsRetrySeconds`.
    static func originRetryDelay(failures: Int, error: String = PolicyBlock.networkError.rawValue) -> Double {
        let delay = originBackoff.nominal(afterFailures: failures)
        return error == PolicyBlock.tlsFailed.rawValue ? max(delay, RetryPolicy.tlsRetrySeconds) : delay
    }

    /// The origin failed this file's transfer (after the transfer's own quick retries): its
    /// owners wait Idle with `error` (`NetworkError`, `TLSFailed`, `Unauthorized`) and the
    /// reason, and it is tried again after a growing delay, resuming from the `.part`.
    private func originFailed(_ job: FileJob, error: String, reason: String) async {
        let delay = state.withLock { s -> Double in
            let failures = (s.originRetry[job.fileId]?.failures ?? 0) + 1
            let delay = Self.originRetryDelay(failures: failures, error: error)
            s.originRetry[job.fileId] = (Date().addingTimeInterval(delay), failures)
            return delay
        }
        logger.warning(
            "the origin failed a download; it is tried again by itself",
            metadata: ["file": "\(job.relative)", "retryInSeconds": "\(Int(delay))", "error": "\(error)", "reason": "\(reason)"])
        await markIdle([job.fileId], error: error, reason)
    }

    /// A transfer gave up its slot, the `stalls`-th time in a row (`SlotWatch`: no data, or a
    /// trickle while other files wait): its owners wait Idle with `NetworkError` and the reason
    /// (`Stalled: …`), and it is tried again after `originRetryDelay(failures: stalls)`,
    /// resuming from the `.part`, as after a failing origin.
    private func transferStalled(_ job: FileJob, stalls: Int, reason: String) async {
        let delay = Self.originRetryDelay(failures: stalls)
        state.withLock { $0.originRetry[job.fileId] = (Date().addingTimeInterval(delay), stalls) }
        logger.warning(
            "a download gave up its slot; it is tried again by itself",
            metadata: ["file": "\(job.relative)", "retryInSeconds": "\(Int(delay))", "reason": "\(reason)"])
        await markIdle([job.fileId], .networkError, reason)
    }

    /// Whether the file's last transfer ended on a failing origin or stalled (its owners may show `NetworkError`).
    func originFailedBefore(_ fileId: Int64) -> Bool { state.withLock { $0.originRetry[fileId] != nil } }

    /// The origin answers for this file again (bytes arrived, it refused the file, or the file
    /// was verified): a later failure starts the backoff over.
    func originAnswered(_ fileId: Int64) { state.withLock { _ = $0.originRetry.removeValue(forKey: fileId) } }

    /// Files among `fileIds` some queued `offline.add` token asked for with `allowCellular: true`.
    func cellularAllowedFiles(_ fileIds: [Int64]) async -> Set<Int64> {
        guard !fileIds.isEmpty else { return [] }
        return (try? await idle.cellularAllowed(among: fileIds)) ?? []
    }

    // MARK: Item states

    /// The products waiting for these files become Idle with `block` and `reason`, and the
    /// files themselves carry it (what a station's items show); an event for each product or
    /// station item whose state or error changed (a new reason alone is not news).
    func markIdle(_ fileIds: [Int64], _ block: PolicyBlock, _ reason: String) async {
        await markIdle(fileIds, error: block.rawValue, reason)
    }

    /// `markIdle` with the error's name: a `PolicyBlock`, or the origin's `Unauthorized`.
    func markIdle(_ fileIds: [Int64], error: String, _ reason: String) async {
        guard !fileIds.isEmpty else { return }
        noteWaiting(fileIds.count, error, reason)
        let (products, stationItems) = (try? await idle.markIdle(fileIds, error, reason)) ?? ([], [])
        for product in products {
            events.publish(.itemStateChanged(.product(product), state: "idle", error: error, reason: reason))
        }
        for item in stationItems {
            events.publish(
                .itemStateChanged(
                    .stationItem(stationId: item.stationId, itemId: item.itemId), state: "idle",
                    error: error, reason: reason))
        }
    }

    /// Logs why downloads wait, once per reason (again after a minute if it persists): an
    /// admission round runs on every kick, and each would otherwise say the same thing.
    private func noteWaiting(_ count: Int, _ block: String, _ reason: String) {
        let why = "\(block): \(reason)"
        let now = Date()
        let fresh = state.withLock { s in
            if let last = s.lastWait, last.why == why, now.timeIntervalSince(last.at) < 60 { return false }
            s.lastWait = (why, now)
            return true
        }
        if fresh {
            logger.notice("downloads wait", metadata: ["files": "\(count)", "why": "\(block)", "reason": "\(reason)"])
        }
    }

    /// Items Idle for a network reason that the current verdict allows go back to Queued.
    func releaseNetworkIdle() async {
        let verdict = self.verdict
        if case .blocked = verdict { return }
        let onlyOverridden: Bool
        if case .perItem = verdict { onlyOverridden = true } else { onlyOverridden = false }
        let released = (try? await idle.releaseNetworkIdle(onlyOverridden: onlyOverridden)) ?? []
        for product in released {
            events.publish(.itemStateChanged(.product(product), state: "queued"))
        }
    }

    /// Every product still waiting for bytes goes Idle under a verdict that forbids it.
    func idleBlockedQueue() async {
        let verdict = self.verdict
        let (block, reason): (PolicyBlock, String)
        switch verdict {
        case .allowed: return
        case .blocked(let b, let r), .perItem(let b, let r): (block, reason) = (b, r)
        }
        let waiting = (try? await idle.waitingFiles()) ?? []
        let exempt: Set<Int64>
        if case .perItem = verdict { exempt = await cellularAllowedFiles(waiting) } else { exempt = [] }
        await markIdle(waiting.filter { !exempt.contains($0) }, block, reason)
    }
}
