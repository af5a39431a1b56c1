import Foundation

/// What the outbox holds: a play event (`/v1/plays`), a consumption record (`/v1/consumption`)
/// or a streaming metric or progress event (`/v1/metrics`).
enum RecordKind: String, Sendable, CaseIterable, Codable {
    case play
    case consumption
    case metric

    /// The id member of one item, as the origin names it.
    var idKey: String { self == .consumption ? "recordId" : "eventId" }
    /// The request member holding the list, and the path it is posted to.
    var listKey: String { self == .consumption ? "records" : "events" }
    var path: String {
        switch self {
        case .play: "/v1/plays"
        case .consumption: "/v1/consumption"
        case .metric: "/v1/metrics"
        }
    }

    /// The stem of the reporter's events about this kind (`PlaysDelivered`, `MetricsRejected`, …).
    var eventStem: String {
        switch self {
        case .play: "Plays"
        case .consumption: "Consumption"
        case .metric: "Metrics"
        }
    }
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
