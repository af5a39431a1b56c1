import NIOHTTP1
import Wire

extension Origin {
    /// `POST /v1/plays`, `POST /v1/consumption` and `POST /v1/metrics`: validates the batch, persists the new
    /// ids durably, then answers `accepted` (duplicates included) and `rejected` with reasons.
    func ingest(_ request: OriginRequest, into store: PlayLogStore) async -> OriginResponse {
        let body: [String: JSONValue]
        switch objectBody(request, emptyAllowed: false) {
        case .success(let object): body = object
        case .failure(let failure): return failure.response
        }
        let listKey = store.listKey
        guard let items = body[listKey]?.arrayValue else {
            return badRequest("\(listKey) must be an array.", request)
        }
        guard items.count <= OriginLimits.maxEventsPerRequest else {
            return error(
                .badRequest, subStatus: 4001,
                "At most \(OriginLimits.maxEventsPerRequest) \(listKey) per request, got \(items.count).",
                path: request.path)
        }
        do {
            let outcome = try await store.ingest(items, receivedAt: serverTime)
            return ok(["accepted": .array(outcome.accepted.map(JSONValue.string)), "rejected": .array(outcome.rejected)])
        } catch {
            return self.error(.internalServerError, subStatus: 5000, "Cannot record \(listKey): \(error)", path: request.path)
        }
    }
}
