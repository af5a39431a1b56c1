/// The engine's side of the slot watch (`SlotWatch`): whether the watch's task runs, which
/// transfers it stopped and why (their cancellation is a stall, not a pause), and which files
/// gave up their slot, with how many times in a row (they start behind the others).
struct Preemptions {
    /// Which transfers give up their slot, judged every second while transfers run.
    private var watch: SlotWatch
    private var watchRunning = false
    /// Transfers the watch stopped, and why.
    private var preempted: [Int64: (attempt: Int, verdict: SlotWatch.Verdict)] = [:]
    /// Files that gave up their slot, with how many times in a row.
    private var stalls: [Int64: Int] = [:]

    init(limits: SlotWatch.Limits) {
        watch = SlotWatch(limits: limits)
    }

    /// True when the watch's task is to start: it does not run yet. It stops by itself once no
    /// transfer runs (`look`).
    mutating func begin() -> Bool {
        guard !watchRunning else { return false }
        watchRunning = true
        watch.reset()
        return true
    }

    /// One look of the slot watch at the transfers followed: the files whose transfer is to be
    /// cancelled (its end is a stall). Nil when nothing runs any more, or the engine stops,
    /// which ends the watch. `attemptOf` holds each running transfer's attempt, `committing`
    /// the files whose body arrived, `waiting` how many files wait for a slot.
    mutating func look(
        _ follows: [Int64: ProgressTicker.Follow], attemptOf: [Int64: Int], committing: Set<Int64>, waiting: Int,
        stopped: Bool
    ) -> [Int64]? {
        guard !follows.isEmpty, !stopped else {
            watchRunning = false
            return nil
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
        var cancel: [Int64] = []
        for (fileId, verdict) in watch.tick(now: SlotWatch.clock(), running: running, waiting: waiting) {
            guard let attempt = attemptOf[fileId], preempted[fileId] == nil else { continue }
            preempted[fileId] = (attempt, verdict)
            cancel.append(fileId)
        }
        return cancel
    }

    /// What a transfer received since the slot watch last looked counts for the others' rate.
    mutating func transferEnded(_ follow: ProgressTicker.Follow, attempt: Int) {
        let seen = follow.seen
        guard let first = seen.first else { return }
        watch.ended(
            fileId: follow.job.fileId, attempt: attempt, bytes: seen.bytes, now: SlotWatch.clock(),
            startedAt: Double(seen.firstAt) / 1e9, startBytes: first)
    }

    /// A cancelled transfer that the watch stopped: how many times in a row its file gave up
    /// its slot, and why. Nil when the cancellation was not the watch's.
    mutating func stalled(_ fileId: Int64, attempt: Int) -> (times: Int, reason: String)? {
        guard let stop = preempted[fileId], stop.attempt == attempt else { return nil }
        let times = (stalls[fileId] ?? 0) + 1
        stalls[fileId] = times
        return (times, stop.verdict.reason)
    }

    /// The file's transfer ended without a stall (or the file is gone): it no longer starts behind.
    mutating func clear(_ fileId: Int64) {
        stalls[fileId] = nil
    }

    /// The transfer's task ended: the watch's stop of that attempt is settled.
    mutating func release(_ fileId: Int64, attempt: Int) {
        if preempted[fileId]?.attempt == attempt { preempted[fileId] = nil }
    }

    /// `jobs` with the files that gave up their slot behind those that did not.
    func stalledLast(_ jobs: [FileJob]) -> [FileJob] {
        guard !stalls.isEmpty else { return jobs }
        return jobs.filter { stalls[$0.fileId] == nil } + jobs.filter { stalls[$0.fileId] != nil }
    }
}
