import Foundation
import OriginClient
import Wire

/// The validity a playbackinfo answer grants (TIDAL `offlineRevalidateAt`, `offlineValidUntil`).
struct Validity: Sendable, Codable, Equatable {
    var revalidateAt: Date?
    var validUntil: Date?

    init(_ info: JSONValue) {
        revalidateAt = info["offlineRevalidateAt"]?.stringValue.flatMap(UTCTimestamp.parseRFC3339)
        validUntil = info["offlineValidUntil"]?.stringValue.flatMap(UTCTimestamp.parseRFC3339)
    }
}
