import Foundation

/// What the outbox holds: a play event (`/v1/plays`) or a consumption record (`/v1/consumption`).
enum RecordKind: String, Sendable, CaseIterable, Codable {
    case play
    case consumption

    /// The id member of one item, as the origin names it.
    var idKey: String { self == .play ? "eventId" : "recordId" }
    /// The request member holding the list, and the path it is posted to.
    var listKey: String { self == .play ? "events" : "records" }
    var path: String { self == .play ? "/v1/plays" : "/v1/consumption" }
}

/// One validated record, ready to be stored: `body` is exactly the JSON the origin will get.
struct OutboxRecord: Sendable, Equatable {
    var id: String
    var kind: RecordKind
    var body: String
    /// A consumption record's product, remembered in `consumedProducts` ("viewed") when stored.
    var consumedProductId: String? = nil
    var sizeBytes: Int { body.utf8.count }
}

/// How a `record` call ended once the record was durable.
enum StoreOutcome: Sendable, Equatable {
    case stored
    /// The id was already in the outbox (pending, delivered or rejected): nothing was written.
    case duplicate
    /// Refused at the cap; nothing was written.
    case queueFull(queuedBytes: Int)
}
