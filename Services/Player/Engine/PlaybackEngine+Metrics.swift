import Foundation
import Wire

/// TIDAL Streaming Metrics and Progress events for the active product's playback session (its
/// PlaybackContext's `playbackSessionId` is the `streamingSessionId`): `streaming_session_start`
/// once it is resolved, its stalls as they happen, and when it leaves — played to its end, failed,
/// or replaced, reset or stopped — `playback_statistics`, `progress` (when anything was heard)
/// and `streaming_session_end`. Each event is written durably with the play events, in one
/// order, handed to the reporter (`metrics.record`) and published on topic `metrics` (a topic of
/// its own, so that a subscriber of `player` hears the PlaybackEngine's messages only).
extension PlaybackEngine {
    /// The active product has its context: its session starts, once.
    func startSession() {
        guard var current = active, current.session == nil, let context = current.context else { return }
        let now = playClock.now()
        let waited = current.requestedAt.duration(to: .now)
        let ideal = now.addingTimeInterval(-Double(waited.components.seconds) - Double(waited.components.attoseconds) / 1e18)
        let productType = current.product.productType ?? "TRACK"
        current.session = MetricSession(streamingSessionId: context.playbackSessionId, productType: productType, idealStart: ideal)
        active = current
        emit(.streamingSessionStart, context: context, at: now, payload: [
            "streamingSessionId": .string(context.playbackSessionId),
            "timestamp": MetricEvent.millis(now),
            "startReason": .string(current.explicitStart ? "EXPLICIT" : "IMPLICIT"),
            "sessionType": "PLAYBACK",
            "sessionProductType": .string(productType),
            "sessionProductId": .string(current.product.productId),
            "isOfflineModeStart": .bool(config.offlineMode),
            "operatingSystem": "Linux",
        ])
    }

    /// The first frame of the active product was heard.
    func sessionHeard() {
        guard active?.session != nil, active?.session?.actualStart == nil else { return }
        active?.session?.actualStart = playClock.now()
    }

    /// The state became STALLED (or left it): a stall of the active session opens (or closes).
    func noteStall(stalled: Bool) {
        guard var session = active?.session else { return }
        let now = playClock.now()
        if stalled {
            guard session.openStall == nil else { return }
            session.openStall = (assetPosition ?? 0, now)
        } else {
            guard let open = session.openStall else { return }
            session.stalls.append(.init(assetPosition: rounded(open.assetPosition), start: open.start, end: now))
            session.openStall = nil
        }
        active?.session = session
    }

    /// The active product leaves: its session's statistics, its progress (`heardUntil`: where
    /// its play event ended, nil when nothing was heard) and its end.
    func endSession(_ reason: SessionEnd, heardUntil: Double?) {
        guard var current = active, var session = current.session, let context = current.context else { return }
        current.session = nil
        active = current
        let now = playClock.now()
        if let open = session.openStall {
            session.stalls.append(.init(assetPosition: rounded(open.assetPosition), start: open.start, end: now))
        }
        let (endReason, errorCode, errorMessage): (String, JSONValue, JSONValue) = switch reason {
        case .complete: ("COMPLETE", .null, .null)
        case .error(let name, let message): ("ERROR", .string(name), .string(message))
        case .other: ("OTHER", .null, .null)
        }
        let track = context.track
        emit(.playbackStatistics, context: context, at: now, payload: [
            "streamingSessionId": .string(session.streamingSessionId),
            "productType": .string(session.productType),
            "actualProductId": .string(track.actualProductId),
            "actualQuality": track.audioQuality.map(JSONValue.string) ?? .null,
            "actualStreamType": "ON_DEMAND",
            "actualAssetPresentation": "FULL",
            "actualAudioMode": "STEREO",
            "idealStartTimestamp": MetricEvent.millis(session.idealStart),
            "actualStartTimestamp": session.actualStart.map(MetricEvent.millis) ?? .null,
            "endTimestamp": MetricEvent.millis(now),
            "endReason": .string(endReason),
            "errorCode": errorCode,
            "errorMessage": errorMessage,
            "stalls": .array(session.stalls.map { stall in
                ["reason": "UNEXPECTED", "assetPosition": .number(stall.assetPosition),
                 "startTimestamp": MetricEvent.millis(stall.start), "endTimestamp": MetricEvent.millis(stall.end)]
            }),
            "adaptations": .array([]),
            "offline": .bool(track.offline),
        ])
        if let heardUntil {
            var source: JSONValue = .null
            if current.product.sourceId != nil || current.product.sourceType != nil {
                source = ["id": current.product.sourceId.map(JSONValue.string) ?? .null,
                          "type": current.product.sourceType.map(JSONValue.string) ?? .null]
            }
            emit(.progress, context: context, at: now, payload: [
                "playback": [
                    "id": .string(track.actualProductId),
                    "type": .string(session.productType),
                    "durationMS": track.durationSeconds.map { .number(($0 * 1000).rounded()) } ?? .null,
                    "playedMS": .number((heardUntil * 1000).rounded()),
                    "source": source,
                ],
            ])
        }
        emit(.streamingSessionEnd, context: context, at: now, payload: [
            "streamingSessionId": .string(session.streamingSessionId),
            "timestamp": MetricEvent.millis(now),
        ])
    }

    /// Writes one event for the reporter (final at once) and publishes it on topic `metrics`.
    private func emit(_ name: MetricEvent.Name, context: PlaybackContext, at date: Date, payload: JSONValue) {
        let event = MetricEvent(eventId: UUID().uuidString.lowercased(), name: name, productId: context.track.actualProductId,
                                streamingSessionId: context.playbackSessionId, at: PlayEvent.timestamp(date), payload: payload)
        playWrites.yield(PlayWrite(record: .metric(event), closing: true))
        _ = hub.publish(topic: "metrics", type: name.eventType, data: event.json)
    }
}
