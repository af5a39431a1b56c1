import Dispatch

/// Which running transfers give up their download slot, judged once a second from the bytes
/// each has on disk (docs/configuration.md, "Slow transfers"):
///
/// - **Stalled**: no byte for `stallSeconds` (the wait for the answer's headers included),
///   whether or not other files wait: a hung connection is dropped and tried again later.
/// - **Trickling**: below `floorBytesPerSecond` over the last `windowSeconds`, whether or not
///   other files wait: a connection that is all but hung (curl's own low-speed limit, 1 B/s,
///   lets a trickle live for ever), and no link that still carries data gives one file this
///   little.
/// - **Slow**: while other files wait for a slot, a transfer whose rate over the last
///   `windowSeconds` is below 1/`ratio` of the other transfers' (their bytes per second of
///   moving data over the same window, files that ended meanwhile included; a slot held by a
///   hung transfer does not count). At most as many as files wait, slowest first. A transfer alone, or among others as slow as itself (a slow link), keeps
///   its slot.
///
/// A value type fed by the engine (`tick`, `ended`), so that its rules are tested without time.
struct SlotWatch {
    struct Limits: Sendable, Equatable {
        var stallSeconds: Double
        var windowSeconds: Double = DownloaderSettings.slowTransferWindowSeconds
        var ratio: Double = DownloaderSettings.slowTransferRatio
        var floorBytesPerSecond: Double = DownloaderSettings.slowTransferFloorBytesPerSecond
    }

    /// One running transfer as sampled. `attempt` tells a file's attempts apart; `holdsSlot`
    /// is false once its body arrived (it is being written and checked, not downloaded).
    struct Sample: Sendable, Equatable {
        var fileId: Int64
        var attempt: Int
        var bytes: Int64
        var holdsSlot = true
    }

    enum Verdict: Sendable, Equatable {
        /// Nothing arrived for `seconds`.
        case stalled(seconds: Double)
        /// `bytesPerSecond` over the window, under `threshold`: the floor, or 1/ratio of
        /// `others`, the other transfers' rate per slot (nil when none ran).
        case slow(bytesPerSecond: Double, threshold: Double, others: Double?)

        /// The item's reason (`NetworkError`, docs/protocol.md).
        var reason: String {
            switch self {
            case .stalled(let seconds):
                return "Stalled: no data from the origin for \(Int(seconds.rounded())) s"
            case .slow(let rate, let threshold, let others):
                let measured = "\(Self.rate(rate)) over \(Int(DownloaderSettings.slowTransferWindowSeconds)) s"
                if let others, others / DownloaderSettings.slowTransferRatio >= threshold {
                    return "Stalled: \(measured), far below the other downloads' \(Self.rate(others))"
                }
                return "Stalled: \(measured), below \(Self.rate(threshold))"
            }
        }

        static func rate(_ bytesPerSecond: Double) -> String {
            let value = max(0, bytesPerSecond)
            if value >= 1_000_000 { return "\((value / 100_000).rounded() / 10) MB/s" }
            if value >= 1_000 { return "\((value / 100).rounded() / 10) kB/s" }
            return "\(Int(value.rounded())) B/s"
        }
    }

    private struct Track {
        let attempt: Int
        let since: Double
        var bytes: Int64
        var changedAt: Double
        var sampledAt: Double
        /// Seconds this transfer held its slot while data moved (`moving`), in all.
        var moving: Double = 0
        /// (time, bytes, moving) at each tick, back to the last one at or before the window's start.
        var history: [(at: Double, bytes: Int64, moving: Double)]
    }

    private struct Tick {
        var at: Double
        /// Bytes every transfer received since the tick before.
        var bytes: Int64
        /// Seconds of slot use while data moved since the tick before, summed over the transfers.
        var moving: Double
    }

    let limits: Limits
    private var tracks: [Int64: Track] = [:]
    private var ticks: [Tick] = []
    private var lastTick: Double?
    /// What transfers that ended since the last tick received and moved since last sampled.
    private var endedBytes: Int64 = 0
    private var endedMoving = 0.0

    /// The slot watch's clock: seconds of uptime.
    static func clock() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    init(limits: Limits) {
        self.limits = limits
    }

    /// Whether `bytes` in `seconds` is data moving, not a stall or a trickle: the others' rate
    /// is that of the transfers that moved, per second they moved, so that a slot held by a
    /// hung transfer does not make the link look slow.
    private func moved(_ bytes: Int64, in seconds: Double) -> Bool {
        seconds > 0 && Double(bytes) >= limits.floorBytesPerSecond * seconds
    }

    /// A transfer ended (whatever the outcome) at `now`, holding `bytes`; it started at
    /// `startedAt` from `startBytes`. What it received since last sampled (or at all, for a
    /// file that came and went between two looks) counts for the others' rate.
    mutating func ended(fileId: Int64, attempt: Int, bytes: Int64, now: Double, startedAt: Double, startBytes: Int64) {
        let (from, since): (Int64, Double)
        if let track = tracks[fileId], track.attempt == attempt {
            (from, since) = (track.bytes, track.sampledAt)
            tracks[fileId] = nil
        } else {
            (from, since) = (startBytes, startedAt)
        }
        let received = max(0, bytes - from)
        endedBytes += received
        if moved(received, in: now - since) { endedMoving += now - since }
    }

    /// Nothing runs: the next tick starts afresh.
    mutating func reset() {
        tracks = [:]
        ticks = []
        lastTick = nil
        endedBytes = 0
        endedMoving = 0
    }

    /// Samples the running transfers at `now` (seconds on a monotonic clock) and returns those
    /// that give up their slot; `waiting` is how many files wait for one.
    mutating func tick(now: Double, running: [Sample], waiting: Int) -> [(fileId: Int64, verdict: Verdict)] {
        let elapsed = lastTick.map { max(0, now - $0) } ?? 0
        lastTick = now
        var received = endedBytes
        var moving = endedMoving
        (endedBytes, endedMoving) = (0, 0)
        var present = Set<Int64>()
        for sample in running {
            present.insert(sample.fileId)
            guard var track = tracks[sample.fileId], track.attempt == sample.attempt else {
                tracks[sample.fileId] = Track(
                    attempt: sample.attempt, since: now, bytes: sample.bytes, changedAt: now,
                    sampledAt: now, history: [(now, sample.bytes, 0)])
                continue
            }
            let delta = max(0, sample.bytes - track.bytes)
            received += delta
            if sample.holdsSlot, moved(delta, in: now - track.sampledAt) {
                moving += now - track.sampledAt
                track.moving += now - track.sampledAt
            }
            if sample.bytes != track.bytes {
                track.bytes = sample.bytes
                track.changedAt = now
            }
            track.sampledAt = now
            track.history.append((now, sample.bytes, track.moving))
            if let keep = track.history.lastIndex(where: { $0.at <= now - limits.windowSeconds }), keep > 0 {
                track.history.removeFirst(keep)
            }
            tracks[sample.fileId] = track
        }
        tracks = tracks.filter { present.contains($0.key) }
        if elapsed > 0 { ticks.append(Tick(at: now, bytes: received, moving: moving)) }
        ticks.removeAll { $0.at <= now - limits.windowSeconds }

        var verdicts: [(fileId: Int64, verdict: Verdict)] = []
        var slow: [(fileId: Int64, verdict: Verdict, rate: Double)] = []
        let windowBytes = ticks.reduce(Int64(0)) { $0 + $1.bytes }
        let windowMoving = ticks.reduce(0.0) { $0 + $1.moving }
        for sample in running where sample.holdsSlot {
            guard let track = tracks[sample.fileId] else { continue }
            let silent = now - track.changedAt
            if silent >= limits.stallSeconds {
                verdicts.append((sample.fileId, .stalled(seconds: silent)))
                continue
            }
            guard now - track.since >= limits.windowSeconds,
                let start = track.history.last(where: { $0.at <= now - limits.windowSeconds })
            else { continue }
            let own = track.bytes - start.bytes
            let rate = Double(own) / (now - start.at)
            // The others: every byte received in the window but this transfer's, per second
            // the others' data moved.
            let otherSeconds = windowMoving - (track.moving - start.moving)
            let others = otherSeconds >= 1 ? Double(max(0, windowBytes - own)) / otherSeconds : nil
            if rate < limits.floorBytesPerSecond {
                verdicts.append((sample.fileId, .slow(bytesPerSecond: rate, threshold: limits.floorBytesPerSecond, others: others)))
            } else if waiting > 0, let others, rate < others / limits.ratio {
                slow.append((sample.fileId, .slow(bytesPerSecond: rate, threshold: others / limits.ratio, others: others), rate))
            }
        }
        let freed = verdicts.count
        for entry in slow.sorted(by: { $0.rate < $1.rate }).prefix(max(0, waiting - freed)) {
            verdicts.append((entry.fileId, entry.verdict))
        }
        return verdicts
    }
}
