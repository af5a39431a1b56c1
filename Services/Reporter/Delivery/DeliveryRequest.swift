import Foundation
import HTTPClient
import OriginClient
import ServiceLifecycle
import Wire

/// One request: records of one kind, oldest first, and the body that carries them. Sending it
/// and the outbox work around it run beside the delivery loop (`DeliveryEngine.deliver`).
struct DeliveryRequest: Sendable {
    var kind: RecordKind
    var records: [PendingRecord]
    var body: [UInt8]

    static func cut(_ batch: [PendingRecord]) -> [DeliveryRequest] {
        DeliveryBatch.requests(batch).map {
            DeliveryRequest(kind: $0.kind, records: $0.records, body: DeliveryBatch.body(kind: $0.kind, records: $0.records))
        }
    }

    /// One request with the records' stored bodies, and the verdict read from its answer. An
    /// error answer fails with the server's `Retry-After`; no answer with the client's `OriginError`.
    /// A usable answer is noted (`OutboxStore.note`) before this returns. A stop (the service
    /// group's graceful shutdown) cuts the request off at once: `CancellationError`.
    func send(client: OriginClient, store: OutboxStore) async -> Result<UnrecordedVerdict, RefusedBatch> {
        let startedAt = Date()
        let http = HTTPRequest(
            method: "POST", url: client.baseURL + kind.path, headers: ["Content-Type": "application/json"],
            body: body, timeoutSeconds: 30)
        let response: HTTPResponse
        do {
            response = try await cancelWhenGracefulShutdown { try await client.send(http, retry: .none) }
        } catch {
            return .failure(RefusedBatch(startedAt: startedAt, error: error))
        }
        guard (200..<300).contains(response.status) else {
            let retryAfter = response.headers["retry-after"].flatMap { Double($0.trimmingCharacters(in: .whitespaces)) }
            return .failure(
                RefusedBatch(
                    startedAt: startedAt, error: OriginError(status: response.status, body: response.body),
                    retryAfter: retryAfter))
        }
        guard let answer = try? JSONValue.parse(response.body), answer.objectValue != nil else {
            return .failure(
                RefusedBatch(
                    startedAt: startedAt,
                    error: OriginError(
                        name: "BadOriginResponse", message: "the origin's answer to \(kind.path) is not a JSON object")))
        }
        let verdict = DeliveryBatch.verdict(answer: answer, kind: kind, sent: records)
        let decided = verdict.accepted.count + verdict.rejected.count
        let attempt = DeliveryAttempt(
            startedAt: startedAt, endedAt: Date(), records: records.count,
            accepted: verdict.accepted.count, rejected: verdict.rejected.count,
            result: decided > 0 ? .delivered : .failed,
            error: decided > 0 ? Optional<JSONValue>.none : DeliveryAttempt.unusableAnswer)
        var answered = UnrecordedVerdict(kind: kind, verdict: verdict, sent: records, attempt: attempt)
        do {
            answered.note = try await store.note(verdict, attempt: attempt)
        } catch {
            answered.noteFailure = DeliveryAttempt.describe(error)
        }
        return .success(answered)
    }

    /// The batch after rowid `after`, nil when there is none.
    static func read(_ store: OutboxStore, after: Int64, limit: Int) async -> Result<[PendingRecord]?, Error> {
        do {
            let batch = try await store.nextBatch(after: after, limit: limit)
            return .success(batch.isEmpty ? nil : batch)
        } catch {
            return .failure(error)
        }
    }
}

/// A request that got no usable answer: when it started, what went wrong, and the server's
/// `Retry-After` when it answered with an error.
struct RefusedBatch: Error {
    var startedAt: Date
    var error: Error
    var retryAfter: Double?

    /// The failed attempt as `playlog.status` shows it and `playlogAttempts` keeps it.
    func attempt(records: Int) -> DeliveryAttempt {
        DeliveryAttempt(
            startedAt: startedAt, endedAt: Date(), records: records, accepted: 0, rejected: 0, result: .failed,
            error: DeliveryAttempt.describe(error))
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

    /// Marks the verdict's records: with its note when it has one (the attempt is logged with
    /// the note), else in one transaction that also logs the attempt.
    func apply(store: OutboxStore) async throws -> (delivered: Int, rejected: [BatchVerdict.Rejection]) {
        if let note {
            return try await store.apply(noted: note, verdict, sent: sent, at: attempt.endedAt)
        }
        return try await store.apply(verdict, sent: sent, attempt: attempt)
    }

    func commit(store: OutboxStore) async -> Result<(delivered: Int, rejected: [BatchVerdict.Rejection]), Error> {
        do {
            return .success(try await apply(store: store))
        } catch {
            return .failure(error)
        }
    }
}
