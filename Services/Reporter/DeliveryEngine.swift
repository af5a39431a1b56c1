import Foundation
import HTTPClient
import Logging
import OriginClient
import Systemd
import Wire

/// Sends the outbox to the origin: one batch in flight at a time, oldest first; a record
/// leaves `pending` only when the origin's answer names it. After a failure it waits
/// (`BackoffSchedule`), but `playlog.flush` cuts the wait short, and so does the origin
/// answering TCP connects again after it could not be reached.
actor DeliveryEngine {
    private let outbox: Outbox
    private let client: OriginClient?
    private let settings: ReporterSettings
    private let backoff: BackoffSchedule
    private let events: ReporterEvents
    private let logger: Logger
    private let probe: ReachabilityProbe?
    let bell = Doorbell()

    private var failures = 0
    private var retryAt: ContinuousClock.Instant?
    /// The last failure was "no connection" rather than an answer: probing may end the wait.
    private var unreachable = false
    private var lastError: JSONValue?
    private var inFlight = false
    private var lastAttempt: DeliveryAttempt?
    private var flushWaiters: [CheckedContinuation<DeliveryAttempt?, Never>] = []
    /// The loop will take no more work (it could not open the outbox, or it stopped): a flush
    /// then answers at once instead of waiting for an attempt that never comes.
    private var stopped = false
    /// The origin's answer to the last batch, when the outbox's disk would not take it yet.
    private var unrecorded: UnrecordedVerdict?

    init(outbox: Outbox, client: OriginClient?, settings: ReporterSettings, events: ReporterEvents, logger: Logger) {
        self.outbox = outbox
        self.client = client
        self.settings = settings
        self.backoff = BackoffSchedule(initial: settings.retryInitialSeconds, cap: settings.retryMaxSeconds)
        self.events = events
        self.logger = logger
        self.probe = client.flatMap { ReachabilityProbe(originURL: $0.baseURL) }
    }

    // MARK: The loop

    func run() async {
        defer { park() }
        guard let client else {
            logger.notice("no origin configured: plays are stored and kept until one is")
            _ = await bell.waitUntilClosed()
            return
        }
        let store: OutboxStore
        do {
            store = try await outbox.store()
            lastAttempt = try await store.lastAttempt()
        } catch {
            logger.error("delivery cannot start: the outbox is unavailable", metadata: ["error": "\(error)"])
            park()
            _ = await bell.waitUntilClosed()
            return
        }
        while !Task.isCancelled {
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
                if await bell.wait(seconds: nil).contains(.closed) { return }
                continue
            }
            if let retryAt, retryAt > .now {
                let reasons = await waitOut(until: retryAt)
                if reasons.contains(.closed) { return }
                if reasons.isEmpty || reasons.contains(.flush) || reasons.contains(.reachable) { self.retryAt = nil }
                continue
            }
            retryAt = nil
            guard !batch.isEmpty else { continue }
            await attempt(batch, client: client, store: store)
            answerFlushes(lastAttempt)
        }
    }

    /// Sleeps until `instant` unless rung; while the origin is unreachable, probes it every
    /// `probeIntervalSeconds` and rings `.reachable` once it answers a connect after failing one.
    private func waitOut(until instant: ContinuousClock.Instant) async -> Set<Doorbell.Reason> {
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

    private func waitForRing(until instant: ContinuousClock.Instant) async -> Set<Doorbell.Reason> {
        while true {
            let left = ContinuousClock.now.duration(to: instant)
            guard left > .zero else { return [] }
            let reasons = await bell.wait(seconds: Self.seconds(left))
            // New records alone do not cut a backoff short: the origin is what we wait for.
            if reasons.isEmpty || reasons != [.newRecords] { return reasons }
        }
    }

    /// Probes every `interval` seconds until cancelled, and rings `.reachable` once the origin
    /// answers a connect after failing one.
    private static func ringWhenBack(_ probe: ReachabilityProbe, bell: Doorbell, interval: Double) async {
        var sawDown = false
        while !Task.isCancelled {
            if await probe.isReachable() {
                if sawDown {
                    await bell.ring(.reachable)
                    return
                }
            } else {
                sawDown = true
            }
            try? await Task.sleep(nanoseconds: UInt64(interval * 1e9))
        }
    }

    // MARK: One attempt

    private func attempt(_ batch: [PendingRecord], client: OriginClient, store: OutboxStore) async {
        inFlight = true
        defer { inFlight = false }
        if let held = unrecorded {
            // The batch was read before this verdict was on disk: read again after committing it.
            do {
                _ = try await record(held, store: store)
                unrecorded = nil
            } catch {
                fail(error: Self.describe(error), pending: store.snapshot.pending)
            }
            return
        }
        for (kind, records) in DeliveryBatch.requests(batch) {
            let startedAt = Date()
            let answer: JSONValue
            do {
                answer = try await post(kind: kind, records: records, client: client)
            } catch {
                var retryAfter: Double?
                var error = error
                if let refused = error as? RefusedBatch {
                    retryAfter = refused.retryAfter
                    error = refused.error
                }
                let described = Self.describe(error)
                let attempt = DeliveryAttempt(startedAt: startedAt, endedAt: Date(), records: records.count,
                                              accepted: 0, rejected: 0, result: .failed, error: described)
                lastAttempt = attempt
                try? await store.recordFailure(sent: records, attempt: attempt)
                unreachable = (error as? OriginError)?.transportError != nil
                fail(error: described, pending: store.snapshot.pending, retryAfter: retryAfter)
                return
            }
            let verdict = DeliveryBatch.verdict(answer: answer, kind: kind, sent: records)
            let decided = verdict.accepted.count + verdict.rejected.count
            let attempt = DeliveryAttempt(startedAt: startedAt, endedAt: Date(), records: records.count,
                                          accepted: verdict.accepted.count, rejected: verdict.rejected.count,
                                          result: decided > 0 ? .delivered : .failed,
                                          error: decided > 0 ? Optional<JSONValue>.none : Self.unusableAnswer)
            lastAttempt = attempt
            let held = UnrecordedVerdict(kind: kind, verdict: verdict, sent: records, attempt: attempt)
            do {
                let pending = try await record(held, store: store)
                guard decided > 0 else {
                    fail(error: Self.unusableAnswer, pending: pending)
                    return
                }
            } catch {
                // The origin has these records: sending them again would make it count them twice.
                // The verdict is kept and committed before anything else goes out.
                logger.warning("the origin's answer could not be recorded; it is kept and recorded before the next batch",
                               metadata: ["error": "\(error)"])
                unrecorded = held
                fail(error: Self.describe(error), pending: store.snapshot.pending)
                return
            }
        }
        failures = 0
        unreachable = false
        lastError = nil
    }

    /// What the origin said about a batch, not yet committed to the outbox (its disk was full).
    struct UnrecordedVerdict: Sendable {
        var kind: RecordKind
        var verdict: BatchVerdict
        var sent: [PendingRecord]
        var attempt: DeliveryAttempt
    }

    /// Commits a verdict and tells about it; returns the records still pending.
    private func record(_ held: UnrecordedVerdict, store: OutboxStore) async throws -> Int {
        let (delivered, rejected) = try await store.apply(held.verdict, sent: held.sent, attempt: held.attempt)
        let counts = store.snapshot
        if delivered > 0 {
            logger.info("delivered to the origin", metadata: LogMessageID.playsDelivered.metadata(
                ["kind": "\(held.kind.rawValue)", "count": "\(delivered)", "pending": "\(counts.pending)"]))
            events.delivered(kind: held.kind, count: delivered, pending: counts.pending)
        }
        if !rejected.isEmpty {
            logger.warning("origin rejected records; they are set aside and not sent again",
                           metadata: ["count": "\(rejected.count)", "first": "\(rejected[0].id): \(rejected[0].reason)"])
            events.rejected(kind: held.kind, rejected)
        }
        if outbox.noteFreed(pendingBytes: counts.pendingBytes) {
            events.queueAvailable(queuedBytes: counts.pendingBytes, maxQueueBytes: outbox.maxQueueBytes)
        }
        return counts.pending
    }

    /// One request with the records' stored bodies. An error answer throws `RefusedBatch`
    /// (with the server's `Retry-After`); no answer throws the client's `OriginError`.
    private func post(kind: RecordKind, records: [PendingRecord], client: OriginClient) async throws -> JSONValue {
        let request = HTTPRequest(method: "POST", url: client.baseURL + kind.path, headers: ["Content-Type": "application/json"],
                                  body: DeliveryBatch.body(kind: kind, records: records), timeoutSeconds: 30)
        let response = try await client.send(request, retry: .none)
        guard (200..<300).contains(response.status) else {
            let retryAfter = response.headers["retry-after"].flatMap { Double($0.trimmingCharacters(in: .whitespaces)) }
            throw RefusedBatch(error: OriginError(status: response.status, body: response.body), retryAfter: retryAfter)
        }
        guard let answer = try? JSONValue.parse(response.body), answer.objectValue != nil else {
            throw OriginError(name: "BadOriginResponse", message: "the origin's answer to \(kind.path) is not a JSON object")
        }
        return answer
    }

    struct RefusedBatch: Error {
        var error: OriginError
        var retryAfter: Double?
    }

    /// Schedules the next attempt: the backoff, or the server's `Retry-After` when it asks for
    /// longer (capped at `retryMaxSeconds`).
    private func fail(error: JSONValue, pending: Int, retryAfter: Double? = nil) {
        failures += 1
        lastError = error
        let delay = max(backoff.delay(afterFailures: failures), min(retryAfter ?? 0, settings.retryMaxSeconds))
        retryAt = .now + .milliseconds(Int64(delay * 1000))
        logger.warning("delivery failed; retrying later (the reporter never gives up on a record)",
                       metadata: LogMessageID.deliveryFailing.metadata(
                           ["error": "\(error["name"]?.stringValue ?? "?")", "attempt": "\(failures)",
                            "retryInSeconds": "\(delay)", "pending": "\(pending)"]))
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

    // MARK: Flush and status

    /// Rings for an attempt now and returns once one has ended (nil when nothing was pending).
    func flush() async -> DeliveryAttempt? {
        guard !stopped else { return nil }
        return await withCheckedContinuation { continuation in
            flushWaiters.append(continuation)
            Task { await bell.ring(.flush) }
        }
    }

    private func park() {
        stopped = true
        answerFlushes(nil)
    }

    private func answerFlushes(_ attempt: DeliveryAttempt?) {
        let waiters = flushWaiters
        flushWaiters = []
        for waiter in waiters { waiter.resume(returning: attempt) }
    }

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

extension Doorbell {
    /// Parks until shutdown (a reporter with nothing to deliver to still serves `record`).
    func waitUntilClosed() async -> Set<Reason> {
        while true {
            let reasons = await wait(seconds: nil)
            if reasons.contains(.closed) { return reasons }
        }
    }
}
