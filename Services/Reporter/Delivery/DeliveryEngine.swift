import Foundation
import Logging
import OriginClient
import Pacing
import Systemd
import Wire

/// Sends the outbox to the origin: one batch in flight at a time, oldest first; a record
/// leaves `pending` only when the origin's answer names it. After a failure it waits
/// (`DeliveryRetry`), but `playlog.flush` cuts the wait short, and so does the origin
/// answering TCP connects again after it could not be reached (`ReachabilityProbe`).
actor DeliveryEngine {
    private let outbox: Outbox
    private let client: OriginClient?
    private let settings: ReporterSettings
    private let logger: Logger
    private let report: DeliveryReport
    /// Made when first needed, after a delivery failed: it parses the origin URL with curl, and
    /// an idle reporter has not opened libcurl.
    private lazy var probe: ReachabilityProbe? = client.flatMap { ReachabilityProbe(originURL: $0.baseURL) }
    let bell: Doorbell<DeliveryWake>

    private var retry: DeliveryRetry
    /// Records delivered by this process: `cassette_plays_delivered_total` adds earlier runs.
    nonisolated var deliveredCount: DeliveredCount { report.deliveredCount }
    private var inFlight = false
    private var lastAttempt: DeliveryAttempt?
    /// `playlog.flush` calls waiting for an attempt to end.
    private var flushes = FlushWaiters()
    /// The origin's answers that the outbox's disk would not take yet, oldest first.
    private var unrecorded: [UnrecordedVerdict] = []

    init(
        outbox: Outbox, client: OriginClient?, settings: ReporterSettings, events: ReporterEvents, logger: Logger,
        bell: Doorbell<DeliveryWake> = Doorbell()
    ) {
        self.outbox = outbox
        self.bell = bell
        self.client = client
        self.settings = settings
        self.retry = DeliveryRetry(initialSeconds: settings.retryInitialSeconds, maxSeconds: settings.retryMaxSeconds)
        self.logger = logger
        self.report = DeliveryReport(outbox: outbox, events: events, logger: logger)
    }

    // MARK: The loop

    func run() async {
        defer { flushes.stop() }
        guard let client else {
            logger.notice("no origin configured: plays are stored and kept until one is")
            await bell.wait(wakingFor: [])
            return
        }
        let store: OutboxStore
        do {
            store = try await outbox.store()
            lastAttempt = try await store.lastAttempt()
        } catch {
            logger.error("delivery cannot start: the outbox is unavailable", metadata: ["error": "\(error)"])
            flushes.stop()
            await bell.wait(wakingFor: [])
            return
        }
        // Once shutdown began (the bell closed), the answer to the request in flight is marked
        // and nothing more is sent: what is left goes after the restart.
        while !Task.isCancelled && !bell.isClosed {
            let batch: [PendingRecord]
            do {
                batch = try await store.nextBatch(limit: settings.batchSize)
            } catch {
                logger.error("cannot read the outbox", metadata: ["error": "\(error)"])
                fail(error: ["name": "OutboxUnreadable", "message": .string("\(error)")], pending: store.snapshot.pending)
                batch = []
            }
            if batch.isEmpty && retry.retryAt == nil {
                flushes.answerAll(nil)
                if await bell.wait() == nil { return }
                continue
            }
            if let retryAt = retry.retryAt, retryAt > .now {
                guard let reasons = await waitOut(until: retryAt) else { return }
                if reasons.isEmpty || reasons.contains(.flush) || reasons.contains(.reachable) { retry.retryAt = nil }
                continue
            }
            retry.retryAt = nil
            guard !batch.isEmpty else { continue }
            await deliver(batch, client: client, store: store)
            flushes.answerAll(lastAttempt)
        }
    }

    /// Sleeps until `instant` unless rung; while the origin is unreachable, probes it every
    /// `probeIntervalSeconds` and rings `.reachable` once it answers a connect after failing one.
    private func waitOut(until instant: ContinuousClock.Instant) async -> Set<DeliveryWake>? {
        guard retry.unreachable, let probe else { return await waitForRing(until: instant) }
        return await withTaskGroup(of: Void.self) { group in
            group.addTask { [bell, interval = settings.probeIntervalSeconds] in
                await probe.ringWhenBack(bell, interval: interval)
            }
            let reasons = await waitForRing(until: instant)
            group.cancelAll()
            return reasons
        }
    }

    private func waitForRing(until instant: ContinuousClock.Instant) async -> Set<DeliveryWake>? {
        let left = ContinuousClock.now.duration(to: instant)
        guard left > .zero else { return [] }
        // New records do not cut a backoff short: the origin is what we wait for.
        return await bell.wait(upTo: left, wakingFor: [.flush, .reachable])
    }

    // MARK: Delivering

    /// Delivers `batch` and whatever follows it, back to back, until the outbox is empty, an
    /// attempt fails, an answer leaves records undecided, or shutdown begins.
    ///
    /// One request is in flight at a time, oldest first; what overlaps it is the
    /// local work. When the answer to request N comes, it is noted in one small row
    /// (`OutboxStore.note`), then request N+1 leaves at once, and while it is at the origin
    /// N's records are marked delivered or rejected (hundreds of rows, which deletes the note)
    /// and the batch after N+1 is read and its body built. The next batch is read after the
    /// last rowid read, not as "the oldest pending": the records in flight and those whose
    /// answer is still being marked are pending too.
    ///
    /// Nothing is counted twice or lost: a record leaves `pending` only with the origin's
    /// answer naming it. A kill at any moment makes only the request in flight go again: an
    /// answer is noted before the next request leaves, and a note left behind is
    /// applied when the outbox opens. The origin deduplicates by id anyway. An answer the
    /// disk would not take (a full disk) is kept and committed before anything is read or
    /// sent again.
    private func deliver(_ batch: [PendingRecord], client: OriginClient, store: OutboxStore) async {
        inFlight = true
        defer { inFlight = false }
        if !unrecorded.isEmpty {
            // The batch was read before these verdicts were on disk: read again after committing them.
            while let held = unrecorded.first {
                do {
                    _ = try await record(held, store: store)
                    unrecorded.removeFirst()
                } catch {
                    fail(error: DeliveryAttempt.describe(error), pending: store.snapshot.pending)
                    return
                }
            }
            flushes.answerAll(lastAttempt)
            return
        }
        var queue = DeliveryRequest.cut(batch)
        var readAfter: Int64? = batch.last?.rowid
        /// The last answer, committed in the next round (while the next request is out).
        var answered: UnrecordedVerdict?
        /// Set once the run is to end (after committing `answered`); nil while it keeps going.
        var ending: RunEnd?
        let batchSize = settings.batchSize
        while true {
            let request = ending == nil && !queue.isEmpty ? queue.removeFirst() : nil
            let committing = answered
            guard request != nil || committing != nil else { break }
            let after = readAfter ?? 0
            let readNext = request != nil && queue.isEmpty && readAfter != nil && !bell.isClosed
            // These run at once: the request at the origin, the commit of the previous answer,
            // the read of the next batch.
            async let sending = request == nil ? nil : request!.send(client: client, store: store)
            async let committed = committing == nil ? nil : committing!.commit(store: store)
            async let next = readNext ? DeliveryRequest.read(store, after: after, limit: batchSize) : nil

            if let committing, let result = await committed {
                answered = nil
                switch result {
                case .success(let applied):
                    tell(applied, about: committing, store: store)
                case .failure(let error):
                    // The origin has these records: sending them again would make it count them
                    // twice. The verdict is kept and committed before anything else goes out.
                    logger.warning(
                        "the origin's answer could not be recorded; it is kept and recorded before the next batch",
                        metadata: ["error": "\(error)"])
                    unrecorded.append(committing)
                    ending = .failed(DeliveryAttempt.describe(error))
                }
                flushes.answerAll(lastAttempt)
            }
            switch await next {
            case .success(let more)?:
                queue.append(contentsOf: more.map(DeliveryRequest.cut) ?? [])
                readAfter = more?.last?.rowid
            case .failure(let error)?:
                logger.error("cannot read the outbox", metadata: ["error": "\(error)"])
                readAfter = nil
            case nil:
                break
            }
            guard let request, let sent = await sending else { continue }
            switch sent {
            case .failure(let refused) where refused.error is CancellationError:
                // Cut off by the stop: not a failed attempt. Nothing left `pending`, so the
                // records go again after the restart (the origin deduplicates by id).
                logger.info(
                    "delivery cut off by the stop; the records in flight go again after the restart",
                    metadata: ["records": "\(request.records.count)"])
                if case .failed(let earlier) = ending { fail(error: earlier, pending: store.snapshot.pending) }
                return
            case .failure(let refused):
                let attempt = refused.attempt(records: request.records.count)
                lastAttempt = attempt
                try? await store.recordFailure(sent: request.records, attempt: attempt)
                if case .failed(let earlier) = ending {
                    fail(error: earlier, pending: store.snapshot.pending)
                } else {
                    // A TLS failure connects fine: probing would not tell when the edge is fixed.
                    let origin = refused.error as? OriginError
                    retry.unreachable = origin?.transportError != nil && origin?.isTLSFailure != true
                    fail(
                        error: DeliveryAttempt.describe(refused.error), pending: store.snapshot.pending, retryAfter: refused.retryAfter,
                        atLeast: RetryPolicy.minimumDelay(after: refused.error))
                }
                return
            case .success(let answer):
                lastAttempt = answer.attempt
                if !unrecorded.isEmpty {
                    // An earlier answer could not be committed: this one waits with it.
                    unrecorded.append(answer)
                } else if let failure = answer.noteFailure {
                    // Not even noted: nothing more leaves until it is committed.
                    logger.warning(
                        "the origin's answer could not be recorded; it is kept and recorded before the next batch",
                        metadata: ["error": "\(failure)"])
                    unrecorded.append(answer)
                    ending = .failed(failure)
                } else {
                    answered = answer
                    if !answer.verdict.unanswered.isEmpty {
                        // Named neither way: they go again, oldest first, in a new run; an
                        // answer that named none of them is a failed attempt.
                        ending = answer.attempt.result == .failed ? .failed(DeliveryAttempt.unusableAnswer) : .reread
                    }
                }
            }
        }
        if let ending { finishRun(ending, store: store) } else { retry.succeeded() }
    }

    /// Why a delivery run ends before the outbox is empty.
    enum RunEnd: Sendable {
        /// Some records were left undecided: read again from the oldest pending.
        case reread
        /// The attempt failed: back off.
        case failed(JSONValue)
    }

    private func finishRun(_ end: RunEnd, store: OutboxStore) {
        switch end {
        case .reread: retry.succeeded()
        case .failed(let error): fail(error: error, pending: store.snapshot.pending)
        }
    }

    /// Commits a verdict and tells about it; returns the records still pending.
    private func record(_ held: UnrecordedVerdict, store: OutboxStore) async throws -> Int {
        let applied = try await held.apply(store: store)
        tell(applied, about: held, store: store)
        return store.snapshot.pending
    }

    /// Reports what a committed verdict changed; records that left the queue count as moving.
    private func tell(_ applied: (delivered: Int, rejected: [BatchVerdict.Rejection]), about held: UnrecordedVerdict, store: OutboxStore) {
        if applied.delivered > 0 { retry.moved() }
        report.committed(applied, kind: held.kind, counts: store.snapshot)
    }

    /// Schedules the next attempt (`DeliveryRetry.failed`) and reports the failure.
    private func fail(error: JSONValue, pending: Int, retryAfter: Double? = nil, atLeast: Double = 0) {
        let delay = retry.failed(error: error, retryAfter: retryAfter, atLeast: atLeast)
        report.failed(error: error, failures: retry.failures, retryInSeconds: delay, pending: pending)
    }

    // MARK: Flush

    /// `playlog.flush`: rings for an attempt now and returns once one has ended, or after
    /// `seconds` while it still runs (an origin that never answers holds a request for its
    /// whole timeout).
    func flush(within seconds: Double) async -> FlushOutcome {
        guard !flushes.stopped else { return .ended(nil) }
        let id = flushes.reserve()
        let timer = Task { [weak self] in
            try await Task.sleep(for: .milliseconds(Int64(seconds * 1000)))
            await self?.answerFlush(id, .stillDelivering)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            flushes.wait(id, continuation)
            bell.ring(.flush)
        }
    }

    private func answerFlush(_ id: Int, _ outcome: FlushOutcome) {
        flushes.answer(id, outcome)
    }

    // MARK: Status

    var hasOrigin: Bool { client != nil }

    /// The health gate's "the queue is moving or the origin is known unreachable"
    /// (`DeliveryRetry.healthProblem`); nil too when no origin is configured (records are kept
    /// until one is).
    func healthProblem(pending: Int) -> String? {
        guard hasOrigin else { return nil }
        return retry.healthProblem(pending: pending, stopped: flushes.stopped)
    }

    /// The delivery half of `playlog.status`.
    func status() -> [String: JSONValue] {
        var fields: [String: JSONValue] = [
            "origin": client.map { .string($0.baseURL) } ?? .null,
            "consecutiveFailures": .int(retry.failures),
            "lastError": retry.lastError ?? .null,
            "lastAttempt": lastAttempt?.json ?? .null,
        ]
        let state: String
        if client == nil {
            state = "noOrigin"
        } else if inFlight {
            state = "delivering"
        } else if let left = retry.secondsToRetry {
            state = "waitingToRetry"
            fields["nextAttemptInSeconds"] = .number((left * 1000).rounded() / 1000)
        } else {
            state = "idle"
        }
        fields["state"] = .string(state)
        return fields
    }
}

/// What wakes the delivery loop: new records, `playlog.flush`, or the origin reachable again.
enum DeliveryWake: Hashable, Sendable {
    case newRecords
    case flush
    case reachable
}
