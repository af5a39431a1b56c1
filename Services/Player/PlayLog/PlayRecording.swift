import Foundation
import Wire

/// What is recorded of one product's playback: its play event (from the first frame heard to
/// where it ended, with the listener's actions) and its TIDAL Streaming Metrics session (from
/// its resolution to its end: `streaming_session_start`, its stalls, `playback_statistics`,
/// `progress` when anything was heard, `streaming_session_end`). The active product holds one;
/// each change returns the records to write, in order, which the engine hands to the play log
/// (`PlayWrite`) — a play event may be written again as it grows, a metric event once.
///
/// Times are trusted time (`PlayClock`), given by the caller; positions are rounded to the
/// millisecond.
struct PlayRecording: Sendable {
    /// The play event, once the first frame was heard; nil again after it ended.
    private(set) var play: PlayEvent?
    /// The metrics session, from the product's resolution to its end.
    private(set) var session: MetricSession?

    /// What the product is, for its records.
    struct Subject: Sendable {
        var product: MediaProduct
        var context: PlaybackContext
        var stationId: String?
    }

    // MARK: The play event

    /// The first frame was heard at `position`: the play event starts, and is written at once
    /// (a kill before the next save still leaves a play of length 0 to close).
    mutating func begin(_ subject: Subject, at position: Double, now: Date) -> [Recorded] {
        guard play == nil else { return [] }
        let stamp = PlayEvent.timestamp(now)
        let track = subject.context.track
        let event = PlayEvent(
            eventId: UUID().uuidString.lowercased(), productId: track.actualProductId,
            requestedProductId: track.requestedProductId, stationId: subject.stationId,
            playbackSessionId: subject.context.playbackSessionId, sourceType: subject.product.sourceType,
            sourceId: subject.product.sourceId, startedAt: stamp, endedAt: stamp,
            startPosition: Self.rounded(position), endPosition: Self.rounded(position), offline: track.offline, actions: [],
            extras: subject.product.extras)
        play = event
        if session != nil, session?.actualStart == nil { session?.actualStart = now }
        return [Recorded(PlayWrite(record: .play(event), closing: false))]
    }

    /// A pause, resume or seek, kept in the play event (written with its next save or end).
    mutating func action(_ type: String, position: Double, from: Double? = nil, now: Date) {
        play?.actions.append(
            PlayEvent.Action(
                type: type, at: PlayEvent.timestamp(now), position: Self.rounded(position),
                from: from.map(Self.rounded)))
    }

    /// The play so far, written again (every `playProgressSeconds`): after a kill -9 the event
    /// closes at the last saved point.
    mutating func save(at position: Double?, now: Date) -> [Recorded] {
        guard var event = play else { return [] }
        event.endedAt = PlayEvent.timestamp(now)
        event.endPosition = Self.rounded(position ?? event.endPosition)
        play = event
        return [Recorded(PlayWrite(record: .play(event), closing: false))]
    }

    /// The product leaves (played to its end, failed, replaced, reset or stopped): its play
    /// event ends at `position` (if it started), then its session (`reason`: how it ended).
    mutating func end(_ subject: Subject?, at position: Double?, reason: SessionEnd, now: Date) -> [Recorded] {
        var writes: [Recorded] = []
        var heardUntil: Double?
        if var event = play {
            event.endedAt = PlayEvent.timestamp(now)
            event.endPosition = Self.rounded(position ?? event.endPosition)
            play = nil
            writes.append(Recorded(PlayWrite(record: .play(event), closing: true)))
            heardUntil = event.endPosition
        }
        if let subject { writes += endSession(subject, reason: reason, heardUntil: heardUntil, now: now) }
        return writes
    }

    // MARK: The metrics session

    /// The product has its context: its session starts, once. `waited`: since it was asked for
    /// (the ideal start). `explicit`: asked for by a load, not reached by playing on.
    mutating func startSession(_ subject: Subject, waited: Duration, explicit: Bool, offlineMode: Bool, now: Date) -> [Recorded] {
        guard session == nil else { return [] }
        let ideal = now.addingTimeInterval(-Double(waited.components.seconds) - Double(waited.components.attoseconds) / 1e18)
        let productType = subject.product.productType ?? "TRACK"
        let streamingSessionId = subject.context.playbackSessionId
        session = MetricSession(streamingSessionId: streamingSessionId, productType: productType, idealStart: ideal)
        return [
            metric(
                .streamingSessionStart, subject, at: now,
                payload: [
                    "streamingSessionId": .string(streamingSessionId),
                    "timestamp": MetricEvent.millis(now),
                    "startReason": .string(explicit ? "EXPLICIT" : "IMPLICIT"),
                    "sessionType": "PLAYBACK",
                    "sessionProductType": .string(productType),
                    "sessionProductId": .string(subject.product.productId),
                    "isOfflineModeStart": .bool(offlineMode),
                    "operatingSystem": "Linux",
                ])
        ]
    }

    /// The state became STALLED (or left it) at `position`: a stall of the session opens (or closes).
    mutating func stall(_ stalled: Bool, at position: Double?, now: Date) {
        guard var current = session else { return }
        if stalled {
            guard current.openStall == nil else { return }
            current.openStall = (position ?? 0, now)
        } else {
            guard let open = current.openStall else { return }
            current.stalls.append(.init(assetPosition: Self.rounded(open.assetPosition), start: open.start, end: now))
            current.openStall = nil
        }
        session = current
    }

    /// The session's statistics, its progress (`heardUntil`: where its play event ended, nil
    /// when nothing was heard) and its end.
    private mutating func endSession(_ subject: Subject, reason: SessionEnd, heardUntil: Double?, now: Date) -> [Recorded] {
        guard var ended = session else { return [] }
        session = nil
        if let open = ended.openStall {
            ended.stalls.append(.init(assetPosition: Self.rounded(open.assetPosition), start: open.start, end: now))
        }
        let (endReason, errorCode, errorMessage): (String, JSONValue, JSONValue) =
            switch reason {
            case .complete: ("COMPLETE", .null, .null)
            case .error(let name, let message): ("ERROR", .string(name), .string(message))
            case .other: ("OTHER", .null, .null)
            }
        let track = subject.context.track
        var writes = [
            metric(
                .playbackStatistics, subject, at: now,
                payload: [
                    "streamingSessionId": .string(ended.streamingSessionId),
                    "productType": .string(ended.productType),
                    "actualProductId": .string(track.actualProductId),
                    "actualQuality": track.audioQuality.map(JSONValue.string) ?? .null,
                    "actualStreamType": "ON_DEMAND",
                    "actualAssetPresentation": "FULL",
                    "actualAudioMode": "STEREO",
                    "idealStartTimestamp": MetricEvent.millis(ended.idealStart),
                    "actualStartTimestamp": ended.actualStart.map(MetricEvent.millis) ?? .null,
                    "endTimestamp": MetricEvent.millis(now),
                    "endReason": .string(endReason),
                    "errorCode": errorCode,
                    "errorMessage": errorMessage,
                    "stalls": .array(
                        ended.stalls.map { stall in
                            [
                                "reason": "UNEXPECTED", "assetPosition": .number(stall.assetPosition),
                                "startTimestamp": MetricEvent.millis(stall.start), "endTimestamp": MetricEvent.millis(stall.end),
                            ]
                        }),
                    "adaptations": .array([]),
                    "offline": .bool(track.offline),
                ])
        ]
        if let heardUntil {
            let product = subject.product
            var source: JSONValue = .null
            if product.sourceId != nil || product.sourceType != nil {
                source = [
                    "id": product.sourceId.map(JSONValue.string) ?? .null,
                    "type": product.sourceType.map(JSONValue.string) ?? .null,
                ]
            }
            writes.append(
                metric(
                    .progress, subject, at: now,
                    payload: [
                        "playback": [
                            "id": .string(track.actualProductId),
                            "type": .string(ended.productType),
                            "durationMS": track.durationSeconds.map { .number(($0 * 1000).rounded()) } ?? .null,
                            "playedMS": .number((heardUntil * 1000).rounded()),
                            "source": source,
                        ]
                    ]))
        }
        writes.append(
            metric(
                .streamingSessionEnd, subject, at: now,
                payload: [
                    "streamingSessionId": .string(ended.streamingSessionId),
                    "timestamp": MetricEvent.millis(now),
                ]))
        return writes
    }

    /// One metric event of this session (final at once).
    private func metric(_ name: MetricEvent.Name, _ subject: Subject, at date: Date, payload: JSONValue) -> Recorded {
        let event = MetricEvent(
            eventId: UUID().uuidString.lowercased(), name: name, productId: subject.context.track.actualProductId,
            streamingSessionId: subject.context.playbackSessionId, at: PlayEvent.timestamp(date), payload: payload)
        return Recorded(PlayWrite(record: .metric(event), closing: true), metric: event)
    }

    static func rounded(_ seconds: Double) -> Double { (seconds * 1000).rounded() / 1000 }
}

/// One record to write, and the metric event it carries (also published on the socket).
struct Recorded: Sendable {
    var write: PlayWrite
    var metric: MetricEvent?

    init(_ write: PlayWrite, metric: MetricEvent? = nil) {
        self.write = write
        self.metric = metric
    }
}

/// One write of a play or metric event, applied in order by `PlayLogWriter`.
struct PlayWrite: Sendable {
    var record: ReportRecord
    /// The event is final (a metric event always is).
    var closing: Bool
}
