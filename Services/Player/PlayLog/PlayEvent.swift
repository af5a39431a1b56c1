import Foundation
import OriginClient
import Wire

/// One playback of one product, in TIDAL PlayLog form: handed to the reporter with
/// `playlog.record`, forwarded by it to the origin's `POST /v1/plays`.
struct PlayEvent: Codable, Sendable, Equatable {
    /// A user action during the play. `from` is set for seeks (the position left).
    struct Action: Codable, Sendable, Equatable {
        var type: String // "pause", "resume", "seek"
        var at: String // RFC 3339, UTC, milliseconds
        var position: Double // asset position when it happened (seek: where it landed)
        var from: Double?
    }

    var eventId: String
    /// The actual product (after a replacement).
    var productId: String
    var requestedProductId: String
    var stationId: String?
    var playbackSessionId: String
    var sourceType: String?
    var sourceId: String?
    var startedAt: String
    var endedAt: String
    var startPosition: Double
    var endPosition: Double
    var offline: Bool
    var actions: [Action]
    /// The app's own fields of the media product (`mediaProduct.extras`), passed through untouched.
    var extras: JSONValue?

    var json: JSONValue { (try? JSONCoding.value(self)) ?? .null }

    /// `date` is trusted time (`PlayClock`), never the raw device clock.
    static func timestamp(_ date: Date) -> String {
        UTCTimestamp.rfc3339(date)
    }
}
