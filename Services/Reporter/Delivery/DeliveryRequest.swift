import Foundation
import HTTPClient
import OriginClient
import ServiceLifecycle
import Wire

/// One delivery request and the outbox work around it, run beside the loop (`deliver`).
extension DeliveryEngine {
    /// A request that got no usable answer: when it started, what went wrong, and the server's
    /// `Retry-After` when it answered with an error.
    struct RefusedBatch: Error {
        var startedAt: Date
        var error: Error
        var retryAfter: Double?
    }

    /// One request with the records' stored bodies, and the verdict read from its answer. An
    /// error answer fails with the server's `Retry-After`; no answer with the client's `OriginError`.
    /// A usable answer is noted (`OutboxStore.note`) before this returns. A stop (the service
    /// group's graceful shutdown) cuts the request off at once: `CancellationError`.
    nonisolated static func send(_ request: Request, client: OriginClient, store: OutboxStore) async
        -> Result<UnrecordedVerdict, RefusedBatch>
    {
        let startedAt = Date()
        let http = HTTPRequest(
            method: "POST", url: client.baseURL + request.kind.path, headers: ["Content-Type": "application/json"],
            body: request.body, timeoutSeconds: 30)
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
                        name: "BadOriginResponse", message: "the origin's answer to \(request.kind.path) is not a JSON object")))
        }
        let verdict = DeliveryBatch.verdict(answer: answer, kind: request.kind, sent: request.records)
        let decided = verdict.accepted.count + verdict.rejected.count
        let attempt = DeliveryAttempt(
            startedAt: startedAt, endedAt: Date(), records: request.records.count,
            accepted: verdict.accepted.count, rejected: verdict.rejected.count,
            result: decided > 0 ? .delivered : .failed,
            error: decided > 0 ? Optional<JSONValue>.none : unusableAnswer)
        var answered = UnrecordedVerdict(kind: request.kind, verdict: verdict, sent: request.records, attempt: attempt)
        do {
            answered.note = try await store.note(verdict, attempt: attempt)
        } catch {
            answered.noteFailure = describe(error)
        }
        return .success(answered)
    }

    nonisolated static func commit(_ held: UnrecordedVerdict, store: OutboxStore) async
        -> Result<(delivered: Int, rejected: [BatchVerdict.Rejection]), Error>
    {
        do {
            return .success(try await apply(held, store: store))
        } catch {
            return .failure(error)
        }
    }

    /// The batch after rowid `after`, nil when there is none.
    nonisolated static func read(_ store: OutboxStore, after: Int64, limit: Int) async -> Result<[PendingRecord]?, Error> {
        do {
            let batch = try await store.nextBatch(after: after, limit: limit)
            return .success(batch.isEmpty ? nil : batch)
        } catch {
            return .failure(error)
        }
    }
}
