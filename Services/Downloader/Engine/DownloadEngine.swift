import Catalog
import Foundation
import Logging
import NIOConcurrencyHelpers
import Synchronization
import Systemd
import Wire

/// The download queue: at most `maxParallel` files at once, chosen from the catalog (files not
/// yet verified that some owner — a station or an offline.add token — still wants, oldest
/// request first). The queue *is* the catalog (`downloads` rows, `files.attempts`), so a restart
/// resumes exactly where the last process stopped, with the same attempts counted.
actor DownloadEngine {
    private let store: MediaStore
    private let transfer: FileTransfer
    private let committer: DurableCommitter
    private let events: DownloaderEvents
    private let logger: Logger
    private(set) var maxParallel: Int
    let maxAttempts: Int
    private var active: [Int64: Task<Void, Never>] = [:]
    private var stopped = false
    /// Stations whose progress is to be published (see `noteStationProgress`).
    private var progressDue: Set<String> = []
    private var progressScheduled = false
    /// When station progress was last counted (`noteStationProgress` waits `progressInterval`).
    private var progressCountedAt: UInt64 = 0
    private var progressFlushing = false
    private static let progressIntervalNanos: UInt64 = 200_000_000
    private var kickScheduled = false
    /// What running files of unknown size turned out to hold beyond their admission since the
    /// last admission round (`sizeLearned`).
    private var unreservedBytes: Int64 = 0
    /// The one progress ticker of all running transfers (`ProgressTicker`), and whether it runs.
    private let ticker: ProgressTicker
    private var tickerRunning = false
    private var kickRequested = false
    private var filling = false
    /// The jobs behind `active`, for admission's reservation of what they will still write.
    private var activeJobs: [FileJob] = []
    private let queue: DownloadQueueStore
    private let stationStore: StationStore
    /// Files whose bytes are complete and fsynced, waiting for the committer: they keep their
    /// task in `active` (cancelAndWait and stop still wait for them) but no longer hold a slot,
    /// so the next transfer starts while the batch's rename, directory fsync and catalog commit run.
    ///
    /// A file joins them as soon as its body arrived from the network (`bodyArrived`), while its
    /// last bytes are still being written (a small body's `O_DIRECT` write waits for the disk):
    /// `maxParallel` bounds the transfers using the network.
    private var committing: Set<Int64> = []
    /// Each running transfer's attempt, so that a late `bodyArrived` never frees a slot of the
    /// file's next attempt.
    private var attemptOf: [Int64: Int] = [:]
    private var attempts = 0
    private var transferring: Int { active.count - committing.count }
    /// Files whose transfer ended since the current fill read the queue: that answer may still
    /// list them (verified meanwhile), and they must not start again from it.
    private var endedSinceQueueRead: Set<Int64> = []
    /// The network and storage policy, asked before each file starts.
    private var gate: PolicyGate?
    /// Admitted by the last admission round beyond the free slots, their storage reserved:
    /// each starts as soon as a slot frees, without another round (a round reads the queue and
    /// weighs the storage, which a station of many small files would otherwise pay per file).
    /// Emptied whenever what is wanted or allowed may have changed (`forgetReady`).
    private var ready: [FileJob] = []
    /// Counts `forgetReady` calls: a round that began before one keeps nothing for later, and a
    /// job read before one asks the catalog again whether a product waits for it.
    private var readyEpoch = 0
    /// Which transfers give up their slot (no data, a trickle, or far slower than the others
    /// while files wait), judged every `watchIntervalNanos` while transfers run.
    private var watch: SlotWatch
    private var watchRunning = false
    private static let watchIntervalNanos: UInt64 = 1_000_000_000
    /// Transfers the watch stopped, and why: their cancellation is a stall, not a pause.
    private var preempted: [Int64: (attempt: Int, verdict: SlotWatch.Verdict)] = [:]
    /// Files that gave up their slot, with how many times in a row: they start behind the files
    /// that did not, and each retry waits longer (`PolicyGate.transferStalled`).
    private var stalls: [Int64: Int] = [:]
    /// How many files the last admission round left waiting for a slot, less those started
    /// since: what `ready` holds, through the moment a kick empties it for the next round.
    private var waitingSeen = 0

    func attach(gate: PolicyGate) { self.gate = gate }
    /// Told of a verified file a re-validation waits for, to switch a product to it (the commit
    /// says which: asking for every file cost a catalog read per file of a station).
    private var onVerified: (@Sendable (Int64) async -> Void)?
    func onFileVerified(_ hook: @escaping @Sendable (Int64) async -> Void) { onVerified = hook }

    init(catalog: Catalog, store: MediaStore, transfer: FileTransfer, events: DownloaderEvents,
         settings: DownloaderSettings, logger: Logger) {
        self.store = store
        self.transfer = transfer
        self.committer = DurableCommitter(store: store, catalog: catalog)
        self.queue = DownloadQueueStore(catalog: catalog)
        self.ticker = ProgressTicker(queue: DownloadQueueStore(catalog: catalog), events: events)
        self.stationStore = StationStore(catalog: catalog)
        self.events = events
        self.logger = logger
        self.maxParallel = settings.maxParallel
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

    /// Starts downloads until `maxParallel` run or nothing is wanted.
    ///
    /// One fill runs at a time: a kick that arrives during one makes it go round again instead
    /// of running beside it, so admission (which reserves storage for what it starts) never
    /// sees two rounds' candidates at once. A kick from outside means something changed (a
    /// manifest, a policy, a product): what the last round admitted ahead is weighed again.
    func kick() async {
        forgetReady()
        await refill()
    }

    /// Drops what was admitted ahead: it is read and weighed again by the next round.
    private func forgetReady() {
        ready.removeAll()
        readyEpoch += 1
    }

    /// Starts what was admitted ahead into the free slots.
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
        kickSoon()
    }

    /// A running file of unknown size whose `GET` told its size: admission reserves that from
    /// now on. Once running files together hold more than they were admitted for than the room
    /// the last round left, what was admitted ahead is weighed again (a product bigger than
    /// estimated stops at the storage limit).
    private func sizeLearned(_ fileId: Int64, _ size: Int64) {
        guard let index = activeJobs.firstIndex(where: { $0.fileId == fileId }), activeJobs[index].sizeBytes != size else { return }
        let excess = size - activeJobs[index].sizeBytes
        activeJobs[index].sizeBytes = size
        guard excess > 0 else { return }
        unreservedBytes += excess
        guard unreservedBytes > gate?.roomLeft ?? 0 else { return }
        forgetReady()
        kickSoon()
    }

    /// How many files a round admits ahead of the free slots, and below how many it runs again.
    private var readyTarget: Int { 4 * maxParallel }
    private var readyLow: Int { maxParallel }

    /// Free slots take what was admitted ahead; a round runs when slots stay free or few are
    /// left ahead, so a round serves about `maxParallel` files instead of one.
    private func refill() async {
        startReady()
        guard transferring < maxParallel || ready.count < readyLow else { return }
        kickRequested = true
        guard !filling else { return }
        filling = true
        defer { filling = false }
        while kickRequested, !stopped {
            kickRequested = false
            await fillSlots()
        }
    }

    private func fillSlots() async {
        startReady()
        guard !stopped, transferring < maxParallel || ready.count < readyLow, transfer.origin != nil else { return }
        let ahead = max(0, readyTarget - ready.count)
        let limit = maxParallel + ahead + active.count + ready.count + (gate == nil ? 0 : 32)
        let jobs: [FileJob]
        let epoch = readyEpoch
        endedSinceQueueRead.removeAll()
        do {
            jobs = try await queue.next(limit: limit, maxAttempts: maxAttempts)
        } catch {
            logger.error("download queue: cannot read the catalog: \(error)")
            return
        }
        let held = Set(ready.map(\.fileId))
        var waiting = jobs.filter { active[$0.fileId] == nil && !held.contains($0.fileId) && !endedSinceQueueRead.contains($0.fileId) }
        if !stalls.isEmpty {
            // Files that gave up their slot start behind those that did not.
            waiting = waiting.filter { stalls[$0.fileId] == nil } + waiting.filter { stalls[$0.fileId] != nil }
        }
        let slots = max(0, maxParallel - transferring - ready.count)
        let runnable: [FileJob]
        if let gate {
            // This round weighs the running files at the sizes learned so far.
            unreservedBytes = 0
            runnable = await gate.admit(waiting, slots: slots, prefetch: ahead, running: activeJobs + ready)
        } else {
            runnable = Array(waiting.prefix(slots + ahead))
        }
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

    /// Cancels transfers of files no owner wants any more (paused, cancelled, deleted); their
    /// `.part` stays for a later resume unless the caller removes it.
    func dropUnwanted() async {
        forgetReady()
        guard !active.isEmpty else { return }
        let ids = Array(active.keys)
        let wanted = (try? await queue.wanted(among: ids)) ?? Set(ids)
        for id in ids where !wanted.contains(id) {
            active[id]?.cancel()
        }
    }

    /// Content the catalog no longer points at: transfers nobody wants stop, then each file's
    /// transfer is let go of and its bytes (final file and `.part`) are deleted.
    func discard(_ files: [(id: Int64, path: String)]) async {
        guard !files.isEmpty else { return }
        forgetReady()
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
        // A retry after the origin failed this file keeps its items `idle` with the origin's
        // error until bytes arrive again: a probe of a dead origin is not a download.
        // So does a file of a product the origin's failure left `idle` (another of its files
        // failed): its start alone does not flip the product back to `downloading`.
        var probing = gate?.originFailedBefore(job.fileId) ?? false
        var initialOwners: [ProductRef] = []
        if !probing {
            (initialOwners, probing) = await markStarted(job, mayHaveChanged: epoch != readyEpoch, keepOriginWaits: true)
        }
        let follow = ProgressTicker.Follow(job: job, probing: probing, owners: initialOwners)
        ticker.add(follow)
        startTickerIfNeeded()
        startWatchIfNeeded()
        do {
            let result: TransferResult
            do {
                // A size learned is handed to `bodyArrived` too, which may run first.
                let learned = NIOLockedValueBox<Int64?>(nil)
                result = try await transfer.run(job, onBytes: { bytes in follow.note(bytes) }, onReceived: {
                    let size = learned.withLockedValue { $0 }
                    Task { await self.bodyArrived(job.fileId, attempt: attempt, learned: size) }
                }, onSizeLearned: { size in
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
                if probing { _ = await originAnswersAgain(job) }
                committing.insert(job.fileId)
                // A file of unknown size whose `GET` announced no length learns it here.
                if job.sizeIsEstimate { sizeLearned(job.fileId, sizeBytes) }
                startReady()
                kickSoon()
                defer { committing.remove(job.fileId) }
                // A file of unknown size keeps the length its `GET` announced.
                var done = job
                (done.sizeBytes, done.sizeIsEstimate) = (sizeBytes, false)
                let verified = try await committer.commit(done)
                stalls[job.fileId] = nil
                await fileVerified(done, verified)
            case .refused(let error, let reason):
                // The origin answered: the next try of this file is a download again, not a probe.
                gate?.originAnswered(job.fileId)
                stalls[job.fileId] = nil
                await attemptFailed(job, error: error, reason: reason)
            case .originFailing(let error, let reason):
                await noteInterrupted(job)
                await gate?.originFailed(job, error: error, reason: reason)
            }
        } catch {
            ticker.remove(job.fileId)
            if let stop = preempted[job.fileId], stop.attempt == attempt, Task.isCancelled || error is CancellationError {
                await gaveUpSlot(job, stop.verdict)
            } else if Task.isCancelled || error is CancellationError {
                await noteInterrupted(job)
            } else if let shortage = error as? StorageShortage {
                await noteInterrupted(job)
                await gate?.stoppedForSpace(job, shortage)
            } else {
                await attemptFailed(job, error: "StorageError", reason: "\(error)")
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
        kickSoon()
        // Nothing more is running: the last file of a station completes it now, not after the interval.
        if active.isEmpty, ready.isEmpty, !progressDue.isEmpty { await flushStationProgress() }
    }

    /// A kick once the actor is free: the files of one commit batch finish together, and one
    /// queue query then refills all their slots (each query is linear in the files wanted).
    private func kickSoon() {
        guard !kickScheduled else { return }
        kickScheduled = true
        Task {
            kickScheduled = false
            await refill()
        }
    }

    /// Runs the progress ticker while transfers run; it stops by itself once none does.
    private func startTickerIfNeeded() {
        guard !tickerRunning else { return }
        tickerRunning = true
        let answersAgain: @Sendable (FileJob) async -> [ProductRef] = { job in await self.originAnswersAgain(job) }
        let idle: @Sendable () async -> Bool = { await self.tickerMayStop() }
        Task { [ticker] in await ticker.run(answersAgain: answersAgain, stopWhenIdle: idle) }
    }

    /// Runs the slot watch while transfers run; it stops by itself once none does.
    private func startWatchIfNeeded() {
        guard !watchRunning else { return }
        watchRunning = true
        watch.reset()
        Task {
            repeat {
                try? await Task.sleep(nanoseconds: Self.watchIntervalNanos)
            } while await self.watchTick()
        }
    }

    /// One look of the slot watch: the running transfers' bytes go to `SlotWatch`, and each it
    /// names is cancelled (its end is handled as a stall in `perform`). False when nothing runs
    /// any more, which ends the watch (the next transfer starts it again).
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
            running.append(SlotWatch.Sample(fileId: fileId, attempt: attempt, bytes: seen.bytes,
                                            holdsSlot: !committing.contains(fileId)))
        }
        for (fileId, verdict) in watch.tick(now: Self.watchClock(), running: running, waiting: max(ready.count, waitingSeen)) {
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
        watch.ended(fileId: follow.job.fileId, attempt: attempt, bytes: seen.bytes, now: Self.watchClock(),
                    startedAt: Double(seen.firstAt) / 1e9, startBytes: first)
    }

    /// The slot watch's clock: seconds of uptime.
    private static func watchClock() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// A transfer the slot watch stopped: the `.part` keeps its bytes, the file's owners wait
    /// `idle` (`NetworkError`, the verdict's reason) and it is tried again after a backoff,
    /// behind the files that did not stall.
    ///
    /// Recorded from a task of its own: the transfer's task was cancelled to stop it, and the
    /// catalog's writes refuse to start in a cancelled task.
    private func gaveUpSlot(_ job: FileJob, _ verdict: SlotWatch.Verdict) async {
        let count = (stalls[job.fileId] ?? 0) + 1
        stalls[job.fileId] = count
        let gate = gate
        await Task {
            await self.noteInterrupted(job)
            await gate?.transferStalled(job, stalls: count, reason: verdict.reason)
        }.value
    }

    /// Asked by the ticker when it follows nothing: true lets it end (a transfer that starts
    /// later starts it again); decided on the actor, where transfers are added.
    private func tickerMayStop() -> Bool {
        guard ticker.isIdle else { return false }
        tickerRunning = false
        return true
    }

    /// Products waiting for this file become Downloading (OfflineStarted once per token). After
    /// a failing origin (see `perform`), once bytes arrive again: the file drops that error.
    /// `mayHaveChanged`: something happened since the queue said whether a product waits.
    /// `keepOriginWaits`: the transfer only starts (see `DownloadQueueStore.startProducts`);
    /// `heldForOrigin` then says a product stays idle until bytes arrive.
    private func markStarted(_ job: FileJob, mayHaveChanged: Bool, keepOriginWaits: Bool = false) async
        -> (owners: [ProductRef], heldForOrigin: Bool) {
        let now = Date()
        if let gate, gate.originFailedBefore(job.fileId) {
            _ = try? await queue.clearOriginWait(fileId: job.fileId)
        }
        let changed: [ProductRef]
        let owners: [ProductRef]
        var held = false
        do {
            // Most files (station items) have no product waiting: the queue's answer spares them
            // a write transaction, and a read when nothing changed since.
            guard job.productWaits || mayHaveChanged else { return ([], false) }
            guard try await queue.productWaits(for: job.fileId) else { return ([], false) }
            if job.listed, let started = try await queue.productsAlreadyStarted(waitingFor: job.fileId) {
                (owners, changed) = (started, [])
            } else {
                (owners, changed, held) = try await queue.startProducts(waitingFor: job.fileId, now: now,
                                                                        keepOriginWaits: keepOriginWaits)
            }
        } catch {
            logger.error("cannot mark \(job.relative) started: \(error)")
            return ([], false)
        }
        for owner in changed {
            events.downloads("OfflineStarted", ["token": .string(owner.token), "productId": .string(owner.productId)])
            events.downloads("ItemStateChanged", ["token": .string(owner.token), "productId": .string(owner.productId),
                                                  "state": "downloading"])
        }
        return (owners, held)
    }

    /// Bytes arrive again for a file whose origin had failed: its items are downloading, and a
    /// later failure starts the backoff over.
    private func originAnswersAgain(_ job: FileJob) async -> [ProductRef] {
        let owners = await markStarted(job, mayHaveChanged: true).owners
        gate?.originAnswered(job.fileId)
        return owners
    }

    /// Events for a file the committer made durable and verified (the catalog already says so).
    private func fileVerified(_ job: FileJob, _ verified: DurableCommitter.Verified) async {
        gate?.originAnswered(job.fileId)
        logger.info("downloaded and verified", metadata: LogMessageID.itemCompleted.metadata(
            ["file": "\(job.relative)", "bytes": "\(job.sizeBytes)"]))
        for product in verified.products {
            events.downloads("OfflineDone", ["token": .string(product.token), "productId": .string(product.productId)])
            events.downloads("ItemStateChanged", ["token": .string(product.token), "productId": .string(product.productId),
                                                  "state": "cached"])
        }
        for product in verified.partial {
            events.downloads("ItemStateChanged", ["token": .string(product.token), "productId": .string(product.productId),
                                                  "state": "partiallyCached"])
        }
        for (product, totals) in verified.progressed {
            events.offlineProgress(product, totals: totals)
        }
        noteStationProgress(verified.stations)
        if verified.staged, let onVerified {
            let fileId = job.fileId
            Task { await onVerified(fileId) }
        }
    }

    /// Station progress after files were verified, coalesced and rate-limited: the files
    /// verified within `progressIntervalNanos` share one count instead of each commit batch
    /// re-counting the whole station (a catalog query over all its items). When the engine runs
    /// dry the count comes at once (`perform`), so a station's completion is not delayed.
    private func noteStationProgress(_ stations: [String]) {
        guard !stations.isEmpty else { return }
        progressDue.formUnion(stations)
        guard !progressScheduled else { return }
        progressScheduled = true
        let next = progressCountedAt + Self.progressIntervalNanos
        let now = DispatchTime.now().uptimeNanoseconds
        let wait = next > now ? next - now : 0
        Task {
            if wait > 0 { try? await Task.sleep(nanoseconds: wait) }
            self.progressScheduled = false
            await self.flushStationProgress()
        }
    }

    /// One flush at a time, so counts are published in the order they were taken; a flush
    /// asked for meanwhile is done by the running one going round again.
    private func flushStationProgress() async {
        guard !progressFlushing else { return }
        progressFlushing = true
        defer { progressFlushing = false }
        while !progressDue.isEmpty {
            let due = progressDue
            progressDue = []
            progressCountedAt = DispatchTime.now().uptimeNanoseconds
            await publishStationProgress(due.sorted())
        }
    }

    private func attemptFailed(_ job: FileJob, error: String, reason: String) async {
        let now = Date()
        do {
            let (attempts, failed, failedItems, stations) = try await queue.recordFailedAttempt(
                fileId: job.fileId, error: error, reason: reason, maxAttempts: maxAttempts, now: now)
            let about: Logger.Metadata = ["file": "\(job.relative)", "attempt": "\(attempts) of \(maxAttempts)",
                                          "error": "\(error)", "reason": "\(reason)"]
            if attempts >= maxAttempts {
                logger.error("download failed for good; giving up", metadata: LogMessageID.itemFailed.metadata(about))
            } else {
                logger.warning("download failed; it will be tried again", metadata: about)
            }
            if !failed.isEmpty { await dropUnwanted() }
            for product in failed {
                events.downloads("OfflineFailed", ["token": .string(product.token), "productId": .string(product.productId),
                                                   "error": .string(ItemError.downloadFailed.rawValue), "cause": .string(error),
                                                   "reason": .string(product.reason ?? reason)])
                events.downloads("ItemStateChanged", ["token": .string(product.token), "productId": .string(product.productId),
                                                      "state": "failed", "error": .string(ItemError.downloadFailed.rawValue)])
            }
            for item in failedItems {
                events.downloads("ItemStateChanged", ["stationId": .string(item.stationId), "itemId": .string(item.itemId),
                                                      "state": "failed", "error": .string(ItemError.downloadFailed.rawValue),
                                                      "reason": .string("\(error): \(reason)")])
            }
            await publishStationProgress(stations)
        } catch {
            logger.error("cannot record the failure of \(job.relative): \(error)")
        }
    }

    /// A cancelled transfer: the catalog learns how many bytes the `.part` keeps.
    private func noteInterrupted(_ job: FileJob) async {
        let onDisk = await store.partSize(job.relative)
        _ = try? await queue.recordInterrupted(fileId: job.fileId, bytesOnDisk: onDisk)
    }

    /// Stations whose manifest is being written in parts (`StationSync`), with how many syncs
    /// write one: their counts would be of a part, so none is published until the last part.
    private var applying: [String: Int] = [:]

    func beginApplying(_ station: String) { applying[station, default: 0] += 1 }

    func endApplying(_ station: String) {
        let left = (applying[station] ?? 1) - 1
        applying[station] = left > 0 ? left : nil
    }

    /// Stations whose StationDownloadComplete went out since their last sync: one per sync,
    /// however many paths (a file verified, one failed for good) then find nothing pending.
    private var completeAnnounced: Set<String> = []

    /// StationDownloadProgress for each station, and StationDownloadComplete when none is pending
    /// (once per sync: `afterSync` is the sync's own call, which allows the next one).
    func publishStationProgress(_ stations: [String], afterSync: Bool = false) async {
        for station in stations where applying[station] == nil {
            if afterSync { completeAnnounced.remove(station) }
            guard let progress = try? await stationStore.progress(station, maxAttempts: maxAttempts) else { continue }
            let data: [String: JSONValue] = ["stationId": .string(station), "pending": .number(Double(progress.pending)),
                                             "failed": .number(Double(progress.failed)), "total": .number(Double(progress.total))]
            events.downloads("StationDownloadProgress", data)
            guard progress.pending == 0 else {
                completeAnnounced.remove(station)
                continue
            }
            if completeAnnounced.insert(station).inserted {
                logger.notice("station downloaded", metadata: ["station": "\(station)", "items": "\(progress.total)",
                                                             "failed": "\(progress.failed)"])
                events.downloads("StationDownloadComplete", data)
            }
        }
    }
}
