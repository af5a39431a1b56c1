import Foundation
import Wire

/// One TIDAL Streaming Metrics or Progress event, handed to the reporter with `metrics.record`
/// and forwarded by it to the origin's `POST /v1/metrics` (docs/origin.md). The envelope names
/// the event, the product and the streaming session (the PlaybackContext's `playbackSessionId`)
/// and when it was made (trusted time, like play events); `payload` holds the event's own
/// fields as TIDAL names them, times in epoch milliseconds.
struct MetricEvent: Sendable, Equatable {
    enum Name: String, Sendable, CaseIterable {
        case streamingSessionStart = "streaming_session_start"
        case streamingSessionEnd = "streaming_session_end"
        case playbackStatistics = "playback_statistics"
        case progress

        /// The event type it is also published as, on topic `metrics`.
        var eventType: String {
            switch self {
            case .streamingSessionStart: "StreamingSessionStart"
            case .streamingSessionEnd: "StreamingSessionEnd"
            case .playbackStatistics: "PlaybackStatistics"
            case .progress: "Progress"
            }
        }
    }

    var eventId: String
    var name: Name
    /// The product actually played (after a replacement).
    var productId: String
    var streamingSessionId: String
    /// RFC 3339, trusted time.
    var at: String
    var payload: JSONValue

    var json: JSONValue {
        [
            "eventId": .string(eventId), "name": .string(name.rawValue), "productId": .string(productId),
            "streamingSessionId": .string(streamingSessionId), "at": .string(at), "payload": payload,
        ]
    }

    /// Epoch milliseconds, the unit of TIDAL's metric timestamps.
    static func millis(_ date: Date) -> JSONValue {
        .number((date.timeIntervalSince1970 * 1000).rounded())
    }
}

/// What the Streaming Metrics keep about the active product's playback session between its
/// start and its end.
struct MetricSession: Sendable, Equatable {
    /// A wait for audio while the product played (state STALLED).
    struct Stall: Sendable, Equatable {
        var assetPosition: Double
        var start: Date
        var end: Date
    }

    var streamingSessionId: String
    var productType: String
    /// When the product was asked for (the load, or the end of the one before it): TIDAL's
    /// `idealStartTimestamp`.
    var idealStart: Date
    /// Its first frame was heard: TIDAL's `actualStartTimestamp`.
    var actualStart: Date?
    var stalls: [Stall] = []
    var openStall: (assetPosition: Double, start: Date)?

    static func == (lhs: MetricSession, rhs: MetricSession) -> Bool {
        lhs.streamingSessionId == rhs.streamingSessionId && lhs.stalls == rhs.stalls && lhs.actualStart == rhs.actualStart
            && lhs.openStall?.start == rhs.openStall?.start
    }
}

/// How a playback session ended (TIDAL's `endReason`): played to its end, failed, or left for
/// another reason (a load, a skip, a reset, a stop).
enum SessionEnd: Sendable, Equatable {
    case complete
    case error(name: String, message: String)
    case other
}
