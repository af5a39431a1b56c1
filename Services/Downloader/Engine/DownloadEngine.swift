import Foundation
import Logging
import NIOConcurrencyHelpers
import Pacing
import StateDB

/// The download queue's scheduler: at most `maxParallel` files at once, chosen from the catalog
/// (files not yet verified that some owner — a station or an offline.add token — still wants,
/// oldest request first) and admitted by the policy (`PolicyGate`). It reports how each
/// transfer starts, moves and ends to its `TransferListener`, which turns that into states and
/// events; it publishes nothing itself. The queue *is* the catalog (`downloads` rows,
/// `files.attempts`), so a restart resumes exactly where the last process stopped.
///
/// The engine runs a fill round when its `QueueSignal` rings (the wanted set grew), when the
/// policy changed (`kick`) and when a transfer frees its slot.
actor DownloadEngine {
    private let store: MediaFolder
    private let transfer: FileTransfer
    private let committer: DurableCommitter
    private let queue: DownloadQueueStore
    private let gate: PolicyGate
    private let listener: any TransferListener
    private let logger: Logger
    private(set) var maxParallel: Int
    let maxAttempts: Int
    private var stopped = false
    private var active: [Int64: Task<Void, Never>] = [:]
    /// The jobs behind `active`, for admission's reservation of what they will still write.
    private var activeJobs: [FileJob] = []
    /// Each running transfer's attempt, so that a late `bodyArrived` never frees a slot of the
    /// file's next attempt.
    private var attemptOf: [Int64: Int] = [:]
    private var attempts = 0
    /// Files whose bytes are complete, waiting for the committer: they keep their task in
    /// `active` (cancelAndWait and stop still wait for them) but no longer hold a slot, so the
    /// next transfer starts while the batch's rename, directory fsync and catalog commit run.
    /// A file joins as soon as its body arrived (`bodyArrived`): `maxParallel` bounds the
    /// transfers using the network.
    private var committing: Set<Int64> = []
    private var transferring: Int { active.count - committing.count }
    /// Admitted by the last round beyond the free slots, their storage reserved: each starts as
    /// soon as a slot frees, without another round (a round reads the queue and weighs the
    /// storage, which a station of many small files would otherwise pay per file). Emptied
    /// whenever what is wanted or allowed may have changed (`forgetReady`).
    private var ready: [FileJob] = []
    /// Counts `forgetReady` calls: a round that began before one keeps nothing for later, and a
    /// job read before one asks the catalog again whether a product waits for it.
    private var readyEpoch = 0
    /// Files whose transfer ended since the current round read the queue: that answer may still
    /// list them, and they must not start again from it.
    private var endedSinceQueueRead: Set<Int64> = []
    /// What running files of unknown size turned out to hold beyond their admission since the
    /// last round (`sizeLearned`).
    private var unreservedBytes: Int64 = 0
    private var filling = false
    /// Callers of `refill` that came during a fill, resumed once it ends.
    private var roundWaiters: [CheckedContinuation<Void, Never>] = []
    private var roundRequested = false
    private var roundScheduled = false
    /// The one progress ticker of all running transfers.
    private let ticker: ProgressTicker
    private var tickerRunning = false
    /// Which transfers give up their slot, judged every second while transfers run.
    private var watch: SlotWatch
    private var watchRunning = false
    /// Transfers the watch stopped, and why: their cancellation is a stall, not a pause.
    private var preempted: [Int64: (attempt: Int, verdict: SlotWatch.Verdict)] = [:]
    /// Files that gave up their slot, with how many times in a row: they start behind the others.
    private var stalls: [Int64: Int] = [:]
    /// How many files the last round left waiting for a slot, less those started since.
    private var waitingSeen = 0

    init(
        catalog: StateDB, store: MediaFolder, transfer: FileTransfer, gate: PolicyGate, listener: any TransferListener,
        settings: DownloaderSettings, maxParallel: Int, logger: Logger
    ) {
        self.store = store
        self.transfer = transfer
        self.committer = DurableCommitter(store: store, catalog: catalog)
        self.queue = DownloadQueueStore(catalog: catalog)
        self.gate = gate
        self.listener = listener
        self.ticker = ProgressTicker(queue: queue, listener: listener)
        self.logger = logger
        self.maxParallel = maxParallel
        self.maxAttempts = settings.maxAttempts
        self.watch = SlotWatch(limits: SlotWatch.Limits(stallSeconds: settings.stallTimeoutSeconds))
    }

    var activeFileIds: [Int64] { Array(active.keys) }
    /// The files being downloaded (or committed), for the storage reservation.
    var runningJobs: [FileJob] { activeJobs }

    func setMaxParallel(_ n: Int) async {
        maxParallel = n
        await kick()
    }

    /// Something changed what is wanted or allowed (a policy, the network, the queue's signal):
    /// what the last round admitted ahead is weighed again, and a round fills the free slots.
    ///
    /// One round runs at a time: a kick during one makes it go round again instead of running
    /// beside it, so admission (which reserves storage for what it starts) never sees two
    /// rounds' candidates at once.
    func kick() async {
        forgetReady()
        await refill()
    }

    /// Returns once a round that began after this call weighed the queue: a request answers with
    /// the state admission gave it (a product that does not fit is `idle` with `CacheLimit`).
    /// The queue's signal would start the same round a moment later.
    func weigh() async { await kick() }

    /// Follows the queue's signal until the service stops.
    func follow(_ signal: Doorbell<Ring>) async {
        while await signal.wait() != nil, !stopped { await kick() }
    }

    private func forgetReady() {
        ready.removeAll()
        readyEpoch += 1
    }

    // MARK: Rounds

    /// How many files a round admits ahead of the free slots, and below how many it runs again.
    private var readyTarget: Int { 4 * maxParallel }
    private var readyLow: Int { maxParallel }

    /// Free slots take what was admitted ahead; a round runs when slots stay free or few are
    /// left ahead, so a round serves about `maxParallel` files instead of one.
    private func refill() async {
        startReady()
        guard transferring < maxParallel || ready.count < readyLow else { return }
        roundRequested = true
        guard !filling else {
            // The running fill goes round again for this call; it returns once that round ended.
            await withCheckedContinuation { roundWaiters.append($0) }
            return
        }
        filling = true
        while roundRequested, !stopped {
            roundRequested = false
            await round()
        }
        filling = false
        let waiters = roundWaiters
        roundWaiters = []
        waiters.forEach { $0.resume() }
    }

    /// A refill once the actor is free: the files of one commit batch end together, and one
    /// queue query then refills all their slots.
    private func refillSoon() {
        guard !roundScheduled else { return }
        roundScheduled = true
        Task {
            roundScheduled = false
            await refill()
        }
    }

    private func round() async {
        startReady()
        guard !stopped, transferring < maxParallel || ready.count < readyLow, transfer.origin != nil else { return }
        let ahead = max(0, readyTarget - ready.count)
        let epoch = readyEpoch
        endedSinceQueueRead.removeAll()
        let jobs: [FileJob]
        do {
            jobs = try await queue.next(limit: maxParallel + ahead + active.count + ready.count + 32, maxAttempts: maxAttempts)
        } catch {
            logger.error("download queue: cannot read the catalog: \(error)")
            return
        }
        let held = Set(ready.map(\.fileId))
        var waiting = jobs.filter { active[$0.fileId] == nil && !held.contains($0.fileId) && !endedSinceQueueRead.contains($0.fileId) }
        // Files that gave up their slot start behind those that did not.
        if !stalls.isEmpty { waiting = waiting.filter { stalls[$0.fileId] == nil } + waiting.filter { stalls[$0.fileId] != nil } }
        // This round weighs the running files at the sizes learned so far.
        unreservedBytes = 0
        let runnable = await gate.admit(
            waiting, slots: max(0, maxParallel - transferring - ready.count), prefetch: ahead,
            running: activeJobs + ready)
        // Re-checked after the awaits: a stop, or a transfer started or ended meanwhile, wins;
        // after a `forgetReady` nothing of this round is kept for later.
        startReady()
        for job in runnable where !stopped && active[job.fileId] == nil && !endedSinceQueueRead.contains(job.fileId) {
            if transferring < maxParallel {
                start(job, epoch: epoch)
            } else if epoch == readyEpoch, !ready.contains(where: { $0.fileId == job.fileId }) {
                ready.append(job)
            }
        }
        waitingSeen = ready.count
    }

    private func startReady() {
        while !stopped, transferring < maxParallel, !ready.isEmpty {
            let job = ready.removeFirst()
            guard active[job.fileId] == nil else { continue }
            start(job, epoch: readyEpoch)
        }
        waitingSeen = min(waitingSeen, ready.count)
    }

    private func start(_ job: FileJob, epoch: Int) {
        attempts += 1
        let attempt = attempts
        attemptOf[job.fileId] = attempt
        active[job.fileId] = Task { await self.perform(job, readAt: epoch, attempt: attempt) }
        activeJobs.append(job)
    }

    /// A transfer's body arrived whole: its slot goes to the next file while its last bytes
    /// reach the disk and it is checked and committed.
    private func bodyArrived(_ fileId: Int64, attempt: Int, learned: Int64? = nil) {
        guard attemptOf[fileId] == attempt, !committing.contains(fileId) else { return }
        if let learned { sizeLearned(fileId, learned) }
        committing.insert(fileId)
        startReady()
        refillSoon()
    }

    /// A running file of unknown size whose `GET` told its size: admission reserves that from
    /// now on. Once running files together hold more than they were admitted for than the room
    /// the last round left, what was admitted ahead is weighed again.
    private func sizeLearned(_ fileId: Int64, _ size: Int64) {
        guard let index = activeJobs.firstIndex(where: { $0.fileId == fileId }), activeJobs[index].sizeBytes != size else { return }
        let excess = size - activeJobs[index].sizeBytes
        activeJobs[index].sizeBytes = size
        guard excess > 0 else { return }
        unreservedBytes += excess
        guard unreservedBytes > gate.roomLeft else { return }
        forgetReady()
        refillSoon()
    }

    // MARK: Letting go

    /// Cancels transfers of files no owner wants any more (paused, cancelled, deleted); their
    /// `.part` stays for a later resume unless the caller removes it.
    func dropUnwanted() async {
        forgetReady()
        guard !active.isEmpty else { return }
        let ids = Array(active.keys)
        let wanted = (try? await queue.wanted(among: ids)) ?? Set(ids)
        for id in ids where !wanted.contains(id) { active[id]?.cancel() }
    }

    /// Content the catalog no longer points at: transfers nobody wants stop, then each file's
    /// transfer is let go of and its bytes (final file and `.part`) are deleted.
    func discard(_ files: [(id: Int64, path: String)]) async {
        guard !files.isEmpty else { return }
        await dropUnwanted()
        for file in files {
            await cancelAndWait(fileId: file.id)
            stalls[file.id] = nil
            await store.delete(file.path)
        }
    }

    /// Cancels one file's transfer and waits until it let go of the file.
    func cancelAndWait(fileId: Int64) async {
        forgetReady()
        guard let task = active[fileId] else { return }
        task.cancel()
        await task.value
    }

    /// Graceful shutdown: stop every transfer (bytes stay on disk for the next start).
    func stop() async {
        stopped = true
        forgetReady()
        let tasks = Array(active.values)
        tasks.forEach { $0.cancel() }
        for task in tasks { await task.value }
    }

    // MARK: One file

    private func perform(_ job: FileJob, readAt epoch: Int, attempt: Int) async {
        let (owners, probe) = await listener.starting(job, mayHaveChanged: epoch != readyEpoch)
        let follow = ProgressTicker.Follow(job: job, probing: probe, owners: owners)
        ticker.add(follow)
        startTickerIfNeeded()
        startWatchIfNeeded()
        let (ended, outcome) = await run(job, follow: follow, attempt: attempt)
        if let outcome {
            if Task.isCancelled {
                // The listener writes the catalog, whose writes refuse to start in a cancelled task.
                let listener = listener
                await Task { await listener.ended(ended, outcome) }.value
            } else {
                await listener.ended(ended, outcome)
            }
        }
        active[job.fileId] = nil
        attemptOf[job.fileId] = nil
        if preempted[job.fileId]?.attempt == attempt { preempted[job.fileId] = nil }
        // A body that arrived and then failed its checks frees what `bodyArrived` marked.
        committing.remove(job.fileId)
        activeJobs.removeAll { $0.fileId == job.fileId }
        endedSinceQueueRead.insert(job.fileId)
        startReady()
        refillSoon()
        if active.isEmpty, ready.isEmpty { await listener.drained() }
    }

    /// Transfers and commits one file: the job as it ended (a file of unknown size keeps the
    /// length its `GET` announced) and the outcome, nil when it could not be recorded.
    private func run(_ job: FileJob, follow: ProgressTicker.Follow, attempt: Int) async -> (FileJob, FileOutcome?) {
        do {
            let result: TransferResult
            do {
                // A size learned is handed to `bodyArrived` too, which may run first.
                let learned = NIOLockedValueBox<Int64?>(nil)
                result = try await transfer.run(
                    job, onBytes: { bytes in follow.note(bytes) },
                    onReceived: {
                        let size = learned.withLockedValue { $0 }
                        Task { await self.bodyArrived(job.fileId, attempt: attempt, learned: size) }
                    },
                    onSizeLearned: { size in
                        learned.withLockedValue { $0 = size }
                        Task { await self.sizeLearned(job.fileId, size) }
                    })
            } catch {
                transferEnded(follow, attempt: attempt)
                throw error
            }
            transferEnded(follow, attempt: attempt)
            ticker.remove(job.fileId)
            switch result {
            case .complete(let sizeBytes):
                // Bytes came, maybe between two looks of the ticker: a probe's owners are downloading.
                if follow.probing { _ = await listener.flowingAgain(job) }
                committing.insert(job.fileId)
                if job.sizeIsEstimate { sizeLearned(job.fileId, sizeBytes) }
                startReady()
                refillSoon()
                var done = job
                (done.sizeBytes, done.sizeIsEstimate) = (sizeBytes, false)
                let verified = try await committer.commit(done)
                stalls[job.fileId] = nil
                return (done, .verified(verified))
            case .refused(let error, let reason):
                stalls[job.fileId] = nil
                return (job, await attemptFailed(job, error: error, reason: reason, byOrigin: true))
            case .originFailing(let error, let reason):
                await noteInterrupted(job)
                return (job, .interrupted(.originFailing(error: error, reason: reason)))
            }
        } catch {
            ticker.remove(job.fileId)
            if let stop = preempted[job.fileId], stop.attempt == attempt, Task.isCancelled || error is CancellationError {
                let times = (stalls[job.fileId] ?? 0) + 1
                stalls[job.fileId] = times
                // Recorded from a task of its own: this one was cancelled to stop the transfer.
                await Task { await self.noteInterrupted(job) }.value
                return (job, .interrupted(.stalled(times: times, reason: stop.verdict.reason)))
            } else if Task.isCancelled || error is CancellationError {
                await noteInterrupted(job)
                return (job, .interrupted(.stopped))
            } else if let shortage = error as? StorageShortage {
                await noteInterrupted(job)
                return (job, .interrupted(.noSpace(shortage)))
            }
            return (job, await attemptFailed(job, error: "StorageError", reason: "\(error)", byOrigin: false))
        }
    }

    /// Counts a failed attempt; products that fail for good with it stop their other transfers.
    private func attemptFailed(_ job: FileJob, error: String, reason: String, byOrigin: Bool) async -> FileOutcome? {
        do {
            let failure = try await queue.recordFailedAttempt(
                fileId: job.fileId, error: error, reason: reason,
                maxAttempts: maxAttempts, now: Date())
            if !failure.products.isEmpty { await dropUnwanted() }
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

    // MARK: Progress and the slot watch

    /// Runs the progress ticker while transfers run; it stops by itself once none does.
    private func startTickerIfNeeded() {
        guard !tickerRunning else { return }
        tickerRunning = true
        Task { [ticker] in await ticker.run(stopWhenIdle: { await self.tickerMayStop() }) }
    }

    /// Asked by the ticker when it follows nothing: true lets it end; decided on the actor,
    /// where transfers are added.
    private func tickerMayStop() -> Bool {
        guard ticker.isIdle else { return false }
        tickerRunning = false
        return true
    }

    /// Runs the slot watch while transfers run; it stops by itself once none does.
    private func startWatchIfNeeded() {
        guard !watchRunning else { return }
        watchRunning = true
        watch.reset()
        Task {
            repeat {
                try? await Task.sleep(nanoseconds: 1_000_000_000)
            } while await self.watchTick()
        }
    }

    /// One look of the slot watch: each transfer it names is cancelled (its end is a stall).
    /// False when nothing runs any more, which ends the watch.
    private func watchTick() -> Bool {
        let follows = ticker.current
        guard !follows.isEmpty, !stopped else {
            watchRunning = false
            return false
        }
        var running: [SlotWatch.Sample] = []
        for (fileId, follow) in follows {
            let seen = follow.seen
            // Before its first note the transfer is still reading its `.part`: not yet on the network.
            guard let attempt = attemptOf[fileId], seen.first != nil else { continue }
            running.append(
                SlotWatch.Sample(
                    fileId: fileId, attempt: attempt, bytes: seen.bytes,
                    holdsSlot: !committing.contains(fileId)))
        }
        for (fileId, verdict) in watch.tick(now: SlotWatch.clock(), running: running, waiting: max(ready.count, waitingSeen)) {
            guard let attempt = attemptOf[fileId], preempted[fileId] == nil, let task = active[fileId] else { continue }
            preempted[fileId] = (attempt, verdict)
            task.cancel()
        }
        return true
    }

    /// What a transfer received since the slot watch last looked counts for the others' rate.
    private func transferEnded(_ follow: ProgressTicker.Follow, attempt: Int) {
        let seen = follow.seen
        guard let first = seen.first else { return }
        watch.ended(
            fileId: follow.job.fileId, attempt: attempt, bytes: seen.bytes, now: SlotWatch.clock(),
            startedAt: Double(seen.firstAt) / 1e9, startBytes: first)
    }
}
