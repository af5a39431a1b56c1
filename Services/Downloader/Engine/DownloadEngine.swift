import DequeModule
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
    private let queue: DownloadQueueStore
    private let gate: PolicyGate
    private let listener: any TransferListener
    private let logger: Logger
    private(set) var maxParallel: Int
    let maxAttempts: Int
    private var stopped = false
    private var active: [Int64: Task<Void, Never>] = [:]
    /// The jobs behind `active`, by file, for admission's reservation of what they will still write.
    private var activeJobs: [Int64: FileJob] = [:]
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
    /// whenever what is wanted or allowed may have changed (`forgetReady`). A deque, taken from
    /// the front as slots free, and its files' ids beside it: a start shifts nothing and a
    /// round asks the ids, not the jobs.
    private var ready: Deque<FileJob> = []
    private var readyIds: Set<Int64> = []
    /// Counts `forgetReady` calls: a round that began before one keeps nothing for later, and a
    /// job read before one asks the catalog again whether a product waits for it.
    private var readyEpoch = 0
    /// Files whose transfer ended since the current round read the queue: that answer may still
    /// list them, and they must not start again from it.
    private var endedSinceQueueRead: Set<Int64> = []
    /// What running files of unknown size turned out to hold beyond their admission since the
    /// last round (`sizeLearned`).
    private var unreservedBytes: Int64 = 0
    /// Whether a fill runs, and who waits for its next round.
    private var rounds = FillRounds()
    /// The one progress ticker of all running transfers.
    private let ticker: ProgressTicker
    /// Transfers, checks and commits one file, and records how it ended.
    private let fileRun: FileRun
    /// The slot watch, the transfers it stopped and the files that gave up their slot.
    private var preemptions: Preemptions
    /// How many files the last round left waiting for a slot, less those started since.
    private var waitingSeen = 0

    init(
        catalog: StateDB, store: MediaFolder, transfer: FileTransfer, gate: PolicyGate, listener: any TransferListener,
        settings: DownloaderSettings, maxParallel: Int, logger: Logger
    ) {
        self.store = store
        self.transfer = transfer
        self.queue = DownloadQueueStore(catalog: catalog)
        self.gate = gate
        self.listener = listener
        self.ticker = ProgressTicker(queue: queue, listener: listener)
        self.fileRun = FileRun(
            store: store, transfer: transfer, committer: DurableCommitter(store: store, catalog: catalog), queue: queue,
            listener: listener, ticker: ticker, maxAttempts: settings.maxAttempts, logger: logger)
        self.logger = logger
        self.maxParallel = maxParallel
        self.maxAttempts = settings.maxAttempts
        self.preemptions = Preemptions(limits: SlotWatch.Limits(stallSeconds: settings.stallTimeoutSeconds))
    }

    var activeFileIds: [Int64] { Array(active.keys) }
    /// The files being downloaded (or committed), for the storage reservation.
    var runningJobs: [FileJob] { Array(activeJobs.values) }

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
        readyIds.removeAll()
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
        guard rounds.begin() else {
            // The running fill goes round again for this call; it returns once that round ended.
            await withCheckedContinuation { rounds.join($0) }
            return
        }
        while !stopped, rounds.takeRequest() { await round() }
        rounds.end()
    }

    /// A refill once the actor is free: the files of one commit batch end together, and one
    /// queue query then refills all their slots.
    private func refillSoon() {
        guard rounds.schedule() else { return }
        Task {
            rounds.scheduledRan()
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
        var waiting = jobs.filter { active[$0.fileId] == nil && !readyIds.contains($0.fileId) && !endedSinceQueueRead.contains($0.fileId) }
        // Files that gave up their slot start behind those that did not.
        waiting = preemptions.stalledLast(waiting)
        // This round weighs the running files at the sizes learned so far.
        unreservedBytes = 0
        let runnable = await gate.admit(
            waiting, slots: max(0, maxParallel - transferring - ready.count), prefetch: ahead,
            running: Array(activeJobs.values), ahead: ready.map(StorageBudget.AdmittedAhead.init))
        // Re-checked after the awaits: a stop, or a transfer started or ended meanwhile, wins;
        // after a `forgetReady` nothing of this round is kept for later.
        startReady()
        for job in runnable where !stopped && active[job.fileId] == nil && !endedSinceQueueRead.contains(job.fileId) {
            if transferring < maxParallel {
                start(job, epoch: epoch)
            } else if epoch == readyEpoch, readyIds.insert(job.fileId).inserted {
                ready.append(job)
            }
        }
        waitingSeen = ready.count
    }

    private func startReady() {
        while !stopped, transferring < maxParallel, let job = ready.popFirst() {
            readyIds.remove(job.fileId)
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
        activeJobs[job.fileId] = job
    }

    /// A transfer's body arrived whole: its slot goes to the next file while its last bytes
    /// reach the disk and it is checked and committed.
    func bodyArrived(_ fileId: Int64, attempt: Int, learned: Int64? = nil) {
        guard attemptOf[fileId] == attempt, !committing.contains(fileId) else { return }
        if let learned { sizeLearned(fileId, learned) }
        committing.insert(fileId)
        startReady()
        refillSoon()
    }

    /// A running file of unknown size whose `GET` told its size: admission reserves that from
    /// now on. Once running files together hold more than they were admitted for than the room
    /// the last round left, what was admitted ahead is weighed again.
    func sizeLearned(_ fileId: Int64, _ size: Int64) {
        guard let held = activeJobs[fileId]?.sizeBytes, held != size else { return }
        let excess = size - held
        activeJobs[fileId]?.sizeBytes = size
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
            preemptions.clear(file.id)
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
        startWatchIfNeeded()
        let (ended, outcome) = await fileRun.run(job, follow: follow, attempt: attempt, on: self)
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
        preemptions.release(job.fileId, attempt: attempt)
        // A body that arrived and then failed its checks frees what `bodyArrived` marked.
        committing.remove(job.fileId)
        activeJobs[job.fileId] = nil
        endedSinceQueueRead.insert(job.fileId)
        startReady()
        refillSoon()
        if active.isEmpty, ready.isEmpty { await listener.drained() }
    }

    // MARK: What a running transfer tells

    /// The transfer's body is complete (`FileRun`): its slot goes to the next file while it is
    /// checked and committed; a file of unknown size reserves what it turned out to hold.
    func bodyComplete(_ job: FileJob, sizeBytes: Int64) {
        committing.insert(job.fileId)
        if job.sizeIsEstimate { sizeLearned(job.fileId, sizeBytes) }
        startReady()
        refillSoon()
    }

    /// What a transfer received counts for the slot watch's rates (`Preemptions`).
    func transferEnded(_ follow: ProgressTicker.Follow, attempt: Int) {
        preemptions.transferEnded(follow, attempt: attempt)
    }

    /// The file's transfer ended without a stall: it no longer starts behind the others.
    func clearStalls(_ fileId: Int64) {
        preemptions.clear(fileId)
    }

    /// A cancelled transfer that the slot watch stopped: how many times in a row, and why.
    func stalled(_ fileId: Int64, attempt: Int) -> (times: Int, reason: String)? {
        preemptions.stalled(fileId, attempt: attempt)
    }

    // MARK: Progress and the slot watch

    /// Runs the slot watch while transfers run; it stops by itself once none does.
    private func startWatchIfNeeded() {
        guard preemptions.begin() else { return }
        Task {
            repeat {
                try? await Task.sleep(nanoseconds: 1_000_000_000)
            } while self.watchTick()
        }
    }

    /// One look of the slot watch: each transfer it names is cancelled (its end is a stall).
    /// False when nothing runs any more, which ends the watch.
    private func watchTick() -> Bool {
        let waiting = max(ready.count, waitingSeen)
        guard
            let cancel = preemptions.look(
                ticker.current, attemptOf: attemptOf, committing: committing, waiting: waiting, stopped: stopped)
        else { return false }
        for fileId in cancel { active[fileId]?.cancel() }
        return true
    }
}
