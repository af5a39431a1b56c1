import Foundation
import Logging
import OriginClient
import Pacing
import Systemd
import Wire

/// Sends the outbox to the origin: one batch in flight at a time, oldest first; a record
/// leaves `pending` only when the origin's answer names it. After a failure it waits
/// (`Backoff`, with jitter), but `playlog.flush` cuts the wait short, and so does the origin
/// answering TCP connects again after it could not be reached.
actor DeliveryEngine {
    private let outbox: Outbox
    private let client: OriginClient?
    private let settings: ReporterSettings
    private let backoff: Backoff
    private let events: ReporterEvents
    private let logger: Logger
    /// Made when first needed, after a delivery failed: it parses the origin URL with curl, and
    /// an idle reporter has not opened libcurl.
    private lazy var probe: ReachabilityProbe? = client.flatMap { ReachabilityProbe(originURL: $0.baseURL) }
    let bell: Doorbell<DeliveryWake>

    private(set) var failures = 0
    private var retryAt: ContinuousClock.Instant?
    /// The last failure was "no connection" rather than an answer: probing may end the wait.
    private(set) var unreachable = false
    private(set) var lastError: JSONValue?
    /// When the queue last moved (a delivery succeeded), or the engine started: the health gate's
    /// "the queue is moving" (`DeliveryEngine+Health`).
    private(set) var movedAt = ContinuousClock.now
    /// Records delivered by this process: `cassette_plays_delivered_total` adds earlier runs.
    let deliveredCount = DeliveredCount()
    private var inFlight = false
    private var lastAttempt: DeliveryAttempt?
    /// `playlog.flush` calls waiting for an attempt to end (`DeliveryEngine+Flush`), by id.
    var flushWaiters: [Int: CheckedContinuation<FlushOutcome, Never>] = [:]
    var nextFlushWaiter = 0
    /// The loop will take no more work (it could not open the outbox, or it stopped): a flush
    /// then answers at once instead of waiting for an attempt that never comes.
    var stopped = false
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
        self.backoff = Backoff(initial: settings.retryInitialSeconds, cap: settings.retryMaxSeconds, jitter: 0.2)
        self.events = events
        self.logger = logger
    }

    // MARK: The loop

    func run() async {
        defer { park() }
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
            park()
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
            if batch.isEmpty && retryAt == nil {
                answerFlushes(nil)
                if await bell.wait() == nil { return }
                continue
            }
            if let retryAt, retryAt > .now {
                guard let reasons = await waitOut(until: retryAt) else { return }
                if reasons.isEmpty || reasons.contains(.flush) || reasons.contains(.reachable) { self.retryAt = nil }
                continue
            }
            retryAt = nil
            guard !batch.isEmpty else { continue }
            await deliver(batch, client: client, store: store)
            answerFlushes(lastAttempt)
        }
    }

    /// Sleeps until `instant` unless rung; while the origin is unreachable, probes it every
    /// `probeIntervalSeconds` and rings `.reachable` once it answers a connect after failing one.
    private func waitOut(until instant: ContinuousClock.Instant) async -> Set<DeliveryWake>? {
        guard unreachable, let probe else { return await waitForRing(until: instant) }
        return await withTaskGroup(of: Void.self) { group in
            group.addTask { [bell, interval = settings.probeIntervalSeconds] in
                await Self.ringWhenBack(probe, bell: bell, interval: interval)
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

    /// Probes every `interval` seconds until cancelled, and rings `.reachable` once the origin
    /// answers a connect after failing one.
    private static func ringWhenBack(_ probe: ReachabilityProbe, bell: Doorbell<DeliveryWake>, interval: Double) async {
        var sawDown = false
        while !Task.isCancelled {
            if await probe.isReachable() {
                if sawDown {
                    bell.ring(.reachable)
                    return
                }
            } else {
                sawDown = true
            }
            try? await Task.sleep(nanoseconds: UInt64(interval * 1e9))
        }
    }

    // MARK: Delivering

    /// One request: records of one kind, oldest first, and the body that carries them.
    struct Request: Sendable {
        var kind: RecordKind
        var records: [PendingRecord]
        var body: [UInt8]

        static func cut(_ batch: [PendingRecord]) -> [Request] {
            DeliveryBatch.requests(batch).map { Request(kind: $0.kind, records: $0.records, body: DeliveryBatch.body(kind: $0.kind, records: $0.records)) }
        }
    }

    /// What the origin's answer said about a request, not yet committed to the outbox.
    struct UnrecordedVerdict: Sendable {
        var kind: RecordKind
        var verdict: BatchVerdict
        var sent: [PendingRecord]
        var attempt: DeliveryAttempt
        /// Its note in `playlogVerdicts` (`OutboxStore.note`); nil when noting it failed.
        var note: Int64? = nil
        /// Why noting it failed.
        var noteFailure: JSONValue? = nil
    }

    /// Delivers `batch` and whatever follows it, back to back, until the outbox is empty, an
    /// attempt fails, an answer leaves records undecided, or shutdown begins.
    ///
    /// One request is in flight at a time, oldest first, as before; what overlaps it is the
    /// local work. When the answer to request N comes, it is noted in one small row
    /// (`OutboxStore.note`), then request N+1 leaves at once, and while it is at the origin
    /// N's records are marked delivered or rejected (hundreds of rows, which deletes the note)
    /// and the batch after N+1 is read and its body built. The next batch is read after the
    /// last rowid read, not as "the oldest pending": the records in flight and those whose
    /// answer is still being marked are pending too.
    ///
    /// Nothing is counted twice or lost: a record leaves `pending` only with the origin's
    /// answer naming it. A kill at any moment makes only the request in flight go again, as
    /// before: an answer is noted before the next request leaves, and a note left behind is
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
                    fail(error: Self.describe(error), pending: store.snapshot.pending)
                    return
                }
            }
            answerFlushes(lastAttempt)
            return
        }
        var queue = Request.cut(batch)
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
            async let sending = request == nil ? nil : Self.send(request!, client: client, store: store)
            async let committed = committing == nil ? nil : Self.commit(committing!, store: store)
            async let next = readNext ? Self.read(store, after: after, limit: batchSize) : nil

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
                    ending = .failed(Self.describe(error))
                }
                answerFlushes(lastAttempt)
            }
            switch await next {
            case .success(let more)?:
                queue.append(contentsOf: more.map(Request.cut) ?? [])
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
                let attempt = DeliveryAttempt(
                    startedAt: refused.startedAt, endedAt: Date(), records: request.records.count,
                    accepted: 0, rejected: 0, result: .failed, error: Self.describe(refused.error))
                lastAttempt = attempt
                try? await store.recordFailure(sent: request.records, attempt: attempt)
                if case .failed(let earlier) = ending {
                    fail(error: earlier, pending: store.snapshot.pending)
                } else {
                    // A TLS failure connects fine: probing would not tell when the edge is fixed.
                    let origin = refused.error as? OriginError
                    unreachable = origin?.transportError != nil && origin?.isTLSFailure != true
                    fail(
                        error: Self.describe(refused.error), pending: store.snapshot.pending, retryAfter: refused.retryAfter,
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
                        ending = answer.attempt.result == .failed ? .failed(Self.unusableAnswer) : .reread
                    }
                }
            }
        }
        if let ending { finishRun(ending, store: store) } else { succeeded() }
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
        case .reread: succeeded()
        case .failed(let error): fail(error: error, pending: store.snapshot.pending)
        }
    }

    private func succeeded() {
        movedAt = .now
        failures = 0
        unreachable = false
        lastError = nil
    }

    /// Commits a verdict and tells about it; returns the records still pending.
    private func record(_ held: UnrecordedVerdict, store: OutboxStore) async throws -> Int {
        let applied = try await Self.apply(held, store: store)
        tell(applied, about: held, store: store)
        return store.snapshot.pending
    }

    /// Marks a verdict's records: with its note when it has one (the attempt is logged with
    /// the note), else in one transaction that also logs the attempt.
    nonisolated static func apply(_ held: UnrecordedVerdict, store: OutboxStore) async throws
        -> (delivered: Int, rejected: [BatchVerdict.Rejection])
    {
        if let note = held.note {
            return try await store.apply(noted: note, held.verdict, sent: held.sent, at: held.attempt.endedAt)
        }
        return try await store.apply(held.verdict, sent: held.sent, attempt: held.attempt)
    }

    /// Logs and publishes what a committed verdict changed.
    private func tell(_ applied: (delivered: Int, rejected: [BatchVerdict.Rejection]), about held: UnrecordedVerdict, store: OutboxStore) {
        let counts = store.snapshot
        if applied.delivered > 0 {
            movedAt = .now
            deliveredCount.add(applied.delivered)
            logger.info(
                "delivered to the origin",
                metadata: LogMessageID.playsDelivered.metadata(
                    ["kind": "\(held.kind.rawValue)", "count": "\(applied.delivered)", "pending": "\(counts.pending)"]))
            events.delivered(kind: held.kind, count: applied.delivered, pending: counts.pending)
        }
        if !applied.rejected.isEmpty {
            logger.warning(
                "origin rejected records; they are set aside and not sent again",
                metadata: ["count": "\(applied.rejected.count)", "first": "\(applied.rejected[0].id): \(applied.rejected[0].reason)"])
            events.rejected(kind: held.kind, applied.rejected)
        }
        if outbox.noteFreed(pendingBytes: counts.pendingBytes) {
            events.queueAvailable(queuedBytes: counts.pendingBytes, maxQueueBytes: outbox.maxQueueBytes)
        }
    }

    /// Schedules the next attempt: the backoff, or the server's `Retry-After` when it asks for
    /// longer (capped at `retryMaxSeconds`), and never sooner than `atLeast` (after a TLS
    /// failure, `RetryPolicy.tlsRetrySeconds`).
    private func fail(error: JSONValue, pending: Int, retryAfter: Double? = nil, atLeast: Double = 0) {
        failures += 1
        lastError = error
        let delay = max(backoff.delay(afterFailures: failures), min(retryAfter ?? 0, settings.retryMaxSeconds), atLeast)
        retryAt = .now + .milliseconds(Int64(delay * 1000))
        logger.warning(
            "delivery failed; retrying later (the reporter never gives up on a record)",
            metadata: LogMessageID.deliveryFailing.metadata(
                [
                    "error": "\(error["name"]?.stringValue ?? "?")", "attempt": "\(failures)",
                    "retryInSeconds": "\(delay)", "pending": "\(pending)",
                ]))
        events.deliveryFailed(error: error, failures: failures, retryInSeconds: delay, pending: pending)
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    static let unusableAnswer: JSONValue = [
        "name": "BadOriginResponse",
        "message": "the origin's answer named none of the records sent as accepted or rejected; they stay pending",
    ]

    static func describe(_ error: Error) -> JSONValue {
        if let origin = error as? OriginError {
            var fields: [String: JSONValue] = ["name": .string(origin.name), "message": .string(origin.message)]
            if let status = origin.status { fields["status"] = .int(status) }
            if let subStatus = origin.subStatus { fields["subStatus"] = .int(subStatus) }
            if let transport = origin.transportError { fields["transportError"] = .string(transport) }
            return .object(fields)
        }
        if let rpc = error as? RPCErrorConvertible {
            return ["name": .string(rpc.rpcError.name), "message": .string(rpc.rpcError.message)]
        }
        return ["name": "DeliveryError", "message": .string("\(error)")]
    }

    // MARK: Status

    var hasOrigin: Bool { client != nil }

    /// The delivery half of `playlog.status`.
    func status() -> [String: JSONValue] {
        var fields: [String: JSONValue] = [
            "origin": client.map { .string($0.baseURL) } ?? .null,
            "consecutiveFailures": .int(failures),
            "lastError": lastError ?? .null,
            "lastAttempt": lastAttempt?.json ?? .null,
        ]
        let state: String
        if client == nil {
            state = "noOrigin"
        } else if inFlight {
            state = "delivering"
        } else if let retryAt, retryAt > .now {
            state = "waitingToRetry"
            let left = Self.seconds(ContinuousClock.now.duration(to: retryAt))
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
