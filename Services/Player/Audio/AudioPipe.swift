import Foundation

/// The one meeting point of the decode thread, the output thread and the engine: a bounded
/// queue of decoded audio plus the control flags both threads obey, under one condition
/// variable so that any change (new audio, a pause, a flush, shutdown) wakes whoever waits.
///
/// The decoder runs ahead of the device by at most `capacityBytes` of PCM; that margin is what
/// lets the output thread keep the device fed while the decoder (or, later, the network) is slow.
final class AudioPipe: @unchecked Sendable {
    private let condition = NSCondition()
    let capacityBytes: Int

    // Guarded by `condition`.
    private var items: [PipeItem] = []
    private var head = 0
    private var queuedBytes = 0
    /// Bumped by every flush; a push made under an older epoch is refused.
    private var epoch: UInt64 = 0
    private var jobs: [TrackJob] = []
    private var decoding: TrackToken?
    private var seekRequest: (token: TrackToken, position: Double)?
    private var abortDecoding = false
    /// A next track is being resolved for this one: its end waits for it (gapless) rather
    /// than telling the output that nothing follows.
    private var nextExpected: TrackToken?
    private var dropRequested = false
    private var paused = false
    private var isShutdown = false
    private var loudness = LoudnessSettings()
    private var snapshot = PositionSnapshot(token: nil, position: 0, writtenUpTo: 0, at: .now, running: false)

    init(capacityBytes: Int) {
        self.capacityBytes = max(64 * 1024, capacityBytes)
    }

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        condition.lock()
        defer { condition.unlock() }
        return try body()
    }

    // MARK: Engine side

    /// Forgets everything queued and decoding, and starts `jobs` in order (the first at once).
    /// `expecting` names the job whose end waits for a next track still being resolved (see
    /// `expectNext`); set in the same step, so the decoder cannot finish it unwaited first.
    func replace(jobs newJobs: [TrackJob], expecting: TrackToken? = nil) {
        locked {
            flushLocked()
            abortDecoding = decoding != nil
            seekRequest = nil
            nextExpected = expecting
            jobs = newJobs
            condition.broadcast()
        }
    }

    /// Moves to `job.startPosition` in `job.token`: a cheap decoder seek when the decode thread
    /// still holds that track, else a fresh start of it; `next` is queued after it.
    func seek(_ job: TrackJob, next: TrackJob?) {
        locked {
            flushLocked()
            if decoding == job.token {
                seekRequest = (job.token, job.startPosition)
                jobs = next.map { [$0] } ?? []
            } else {
                abortDecoding = decoding != nil
                seekRequest = nil
                jobs = [job] + (next.map { [$0] } ?? [])
            }
            condition.broadcast()
        }
    }

    /// Sets the track to decode after the current one, replacing any earlier choice. Returns
    /// false when the decoder has already finished the current track and moved on (the caller
    /// then starts `job` itself when the current one ends). `expectingAfterIt`: the end of `job`
    /// in turn waits for a track after it (as `expectNext`, in the same step).
    func setNext(_ job: TrackJob?, after current: TrackToken, expectingAfterIt: Bool = false) -> Bool {
        locked {
            if nextExpected == current { nextExpected = nil }
            defer { condition.broadcast() }
            guard decoding == current || jobs.first?.token == current || endQueuedLocked(current) else { return false }
            if jobs.first?.token == current {
                jobs = [jobs[0]] + (job.map { [$0] } ?? [])
            } else {
                jobs = job.map { [$0] } ?? []
            }
            if let job, expectingAfterIt { nextExpected = job.token }
            return true
        }
    }

    /// The decoder already queued `token`'s end and moved on, but the output has not reached it:
    /// a next track set now still joins without a gap (`more` is decided when the output takes it).
    private func endQueuedLocked(_ token: TrackToken) -> Bool {
        items[head...].contains { if case .end(let t, _) = $0 { return t == token } else { return false } }
    }

    /// Says a next track for `current` is on its way (being resolved): when `current` has been
    /// decoded to its end, the decoder waits for it instead of ending the stream. `setNext`
    /// (with a job, or nil when resolution failed) releases the wait.
    func expectNext(after current: TrackToken) {
        locked { nextExpected = current }
    }

    /// Stops everything: queued audio, decoding, the device's buffer.
    func stop() { replace(jobs: []) }

    func setPaused(_ value: Bool) {
        locked {
            paused = value
            if value {
                snapshot.position = snapshot.position()
                snapshot.at = .now
                snapshot.running = false
            }
            condition.broadcast()
        }
    }

    func shutdown() {
        locked {
            isShutdown = true
            condition.broadcast()
        }
    }

    var position: PositionSnapshot { locked { snapshot } }

    /// The normalization mode and pre-amp. The output thread reads them before every piece it
    /// writes, so a change is heard after at most the device's buffer plus one period.
    var loudnessSettings: LoudnessSettings {
        get { locked { loudness } }
        set { locked { loudness = newValue } }
    }

    /// Sets the reported position ahead of the output thread (a seek is heard a moment later).
    func presetPosition(token: TrackToken, position: Double) {
        locked { snapshot = PositionSnapshot(token: token, position: position, writtenUpTo: position, at: .now, running: false) }
    }

    private func flushLocked() {
        items.removeAll(keepingCapacity: true)
        head = 0
        queuedBytes = 0
        epoch &+= 1
        dropRequested = true
    }

    // MARK: Decode side

    /// Blocks until there is a track to decode; nil at shutdown. Returns the epoch pushes must carry.
    func nextJob() -> (TrackJob, UInt64)? {
        locked {
            while !isShutdown && jobs.isEmpty { condition.wait() }
            if isShutdown { return nil }
            let job = jobs.removeFirst()
            decoding = job.token
            abortDecoding = false
            seekRequest = nil
            return (job, epoch)
        }
    }

    enum DecodeControl {
        case proceed
        case abort
        case seek(Double, epoch: UInt64)
    }

    /// What the decode thread must do before its next chunk.
    func control(for token: TrackToken) -> DecodeControl {
        locked {
            if isShutdown || abortDecoding { return .abort }
            if let request = seekRequest, request.token == token {
                seekRequest = nil
                return .seek(request.position, epoch: epoch)
            }
            return .proceed
        }
    }

    /// Queues `item`, waiting while the pipe is full. False when the pipe was flushed since
    /// `epoch` (the item is dropped; ask `control` what to do next) or at shutdown.
    @discardableResult
    func push(_ item: PipeItem, epoch pushEpoch: UInt64) -> Bool {
        locked {
            while !isShutdown && epoch == pushEpoch && !abortDecoding && seekRequest == nil
                && queuedBytes + item.bytes > capacityBytes && queuedBytes > 0
            {
                condition.wait()
            }
            if case .end(let token, _) = item {
                while !isShutdown && epoch == pushEpoch && !abortDecoding && seekRequest == nil
                    && nextExpected == token && jobs.isEmpty
                {
                    condition.wait()
                }
            }
            guard !isShutdown, epoch == pushEpoch, !abortDecoding, seekRequest == nil else { return false }
            var item = item
            if case .end(let token, _) = item { item = .end(token, more: !jobs.isEmpty) }
            items.append(item)
            queuedBytes += item.bytes
            condition.broadcast()
            return true
        }
    }

    /// The decode thread is done with its track (finished, failed or aborted).
    func decodingEnded() {
        locked {
            decoding = nil
            abortDecoding = false
            condition.broadcast()
        }
    }

    // MARK: Output side

    enum OutputWork {
        case drop
        case pause(Bool)
        case item(PipeItem)
        /// Nothing came before the device ran dry (see `dryAfter`).
        case dry
        /// The time to try the device again came (see `retryAfter`).
        case retry
        case shutdown
    }

    /// Blocks until the output thread has something to do. `devicePaused` is what the device
    /// currently is, so a pause change is reported exactly once.
    /// - Parameters:
    ///   - dryAfter: seconds until the device has played everything written; when nothing it can
    ///     play comes by then (no audio, or a border held for a next track still being resolved)
    ///     the answer is `.dry`. Nil: wait as long as it takes.
    ///   - refillBytes: after `.dry`, audio is handed out again only once this much is queued,
    ///     or the track's end (or a failure, or another track) is, or the decoder cannot queue
    ///     more: playback resumes with a margin rather than trickling at the source's pace.
    ///   - retryAfter: the device is unavailable: no item is handed out (the output holds work it
    ///     could not do), and after these seconds the answer is `.retry`. Drops, pauses and
    ///     shutdown still come.
    func nextOutputWork(
        devicePaused: Bool, dryAfter: Double? = nil, refillBytes: Int? = nil,
        retryAfter: Double? = nil
    ) -> OutputWork {
        let dryDeadline = dryAfter.map { Date().addingTimeInterval(max(0, $0)) }
        let retryDeadline = retryAfter.map { Date().addingTimeInterval(max(0, $0)) }
        return locked {
            while true {
                if isShutdown { return .shutdown }
                if dropRequested {
                    dropRequested = false
                    return .drop
                }
                if paused != devicePaused { return .pause(paused) }
                if let retryDeadline {
                    if Date() >= retryDeadline { return .retry }
                    _ = condition.wait(until: retryDeadline)
                    continue
                }
                if !paused, head < items.count, refillBytes.map({ refilledLocked($0) }) ?? true,
                    let item = takeLocked()
                {
                    return .item(item)
                }
                if let dryDeadline {
                    if Date() >= dryDeadline { return .dry }
                    _ = condition.wait(until: dryDeadline)
                } else {
                    condition.wait()
                }
            }
        }
    }

    /// Takes the next item, or nil when it is an end held for a next track being resolved.
    private func takeLocked() -> PipeItem? {
        var item = items[head]
        if case .end(let token, _) = item {
            // Whether a track follows is decided now, not when the decoder queued the end: a
            // `setNext` may have come in between (the race that once made a gapless border
            // reopen the device).
            let more = head + 1 < items.count || !jobs.isEmpty || (decoding != nil && decoding != token)
            // The next track is being resolved: hold the border until it comes.
            if !more && nextExpected == token { return nil }
            item = .end(token, more: more)
        }
        head += 1
        queuedBytes -= item.bytes
        if head > 256 && head * 2 > items.count {
            items.removeFirst(head)
            head = 0
        }
        condition.broadcast()
        return item
    }

    /// Enough is queued to play on after running dry: `refill` bytes, anything but audio (an end,
    /// a failure, another track), or a pipe the decoder cannot add to (full, or not decoding).
    private func refilledLocked(_ refill: Int) -> Bool {
        if queuedBytes >= min(refill, capacityBytes / 2) { return true }
        if decoding == nil { return true }
        return items[head...].contains { if case .audio = $0 { return false } else { return true } }
    }

    /// True when the next item is queued already (the output need not drain to wait for it).
    var hasQueuedItem: Bool { locked { head < items.count } }

    /// Whether a flush came after the output thread took its current item.
    var flushPending: Bool { locked { dropRequested || isShutdown } }

    func publish(_ new: PositionSnapshot) {
        locked {
            var new = new
            if paused { new.running = false }
            snapshot = new
        }
    }
}
