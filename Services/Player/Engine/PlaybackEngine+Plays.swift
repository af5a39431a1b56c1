import Foundation

extension PlaybackEngine {
    /// The first frame of the active product was heard: its play event starts now, durably,
    /// at `position` when the caller knows it, else where playback is.
    func beginPlay(at position: Double? = nil) {
        guard var current = active, current.play == nil, let context = current.context else { return }
        let now = PlayEvent.timestamp(playClock.now())
        let position = position ?? assetPosition ?? current.startPosition
        let event = PlayEvent(
            eventId: UUID().uuidString.lowercased(), productId: context.track.actualProductId,
            requestedProductId: context.track.requestedProductId, stationId: current.stationId,
            playbackSessionId: context.playbackSessionId, sourceType: current.product.sourceType,
            sourceId: current.product.sourceId, startedAt: now, endedAt: now,
            startPosition: rounded(position), endPosition: rounded(position), offline: context.track.offline, actions: [],
            extras: current.product.extras)
        current.play = event
        active = current
        persist(event, closing: false)
        sessionHeard()
    }

    /// Ends the active product's play event (if it started) at `position` or where playback is,
    /// then its playback session's metrics (`reason`: how it ended).
    func endActivePlay(at position: Double? = nil, reason: SessionEnd = .other) {
        var heardUntil: Double?
        if var current = active, var event = current.play {
            event.endedAt = PlayEvent.timestamp(playClock.now())
            event.endPosition = rounded(position ?? assetPosition ?? event.endPosition)
            current.play = nil
            active = current
            persist(event, closing: true)
            heardUntil = event.endPosition
        }
        endSession(reason, heardUntil: heardUntil)
    }

    func recordAction(_ type: String, position: Double? = nil, from: Double? = nil) {
        guard var current = active, var event = current.play else { return }
        event.actions.append(PlayEvent.Action(type: type, at: PlayEvent.timestamp(playClock.now()),
                                              position: rounded(position ?? assetPosition ?? 0), from: from.map(rounded)))
        current.play = event
        active = current
    }

    /// Saves the open play's progress so far (called every `playProgressSeconds`): after a
    /// kill -9 the event closes at the last saved point.
    func saveProgress() {
        guard var current = active, var event = current.play else { return }
        event.endedAt = PlayEvent.timestamp(playClock.now())
        event.endPosition = rounded(assetPosition ?? event.endPosition)
        current.play = event
        active = current
        persist(event, closing: false)
    }

    /// Queues the event for `playerPlays`, in order (a progress save never overtakes the close);
    /// `PlayLogWriter` keeps it until it is durable, in the catalog or with the reporter.
    private func persist(_ event: PlayEvent, closing: Bool) {
        playWrites.yield(PlayWrite(record: .play(event), closing: closing))
    }

    func rounded(_ seconds: Double) -> Double { (seconds * 1000).rounded() / 1000 }
}

/// One write of a play or metric event, applied in order by `PlayLogWriter`.
struct PlayWrite: Sendable {
    var record: ReportRecord
    /// The event is final (a metric event always is).
    var closing: Bool
}
