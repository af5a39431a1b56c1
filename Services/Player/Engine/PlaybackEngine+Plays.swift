import Foundation

extension PlaybackEngine {
    /// The first frame of the active product was heard: its play event starts now, durably,
    /// at `position` when the caller knows it, else where playback is.
    func beginPlay(at position: Double? = nil) {
        guard var current = active, current.play == nil, let context = current.context else { return }
        let now = PlayEvent.timestamp()
        let position = position ?? assetPosition ?? current.startPosition
        let event = PlayEvent(
            eventId: UUID().uuidString.lowercased(), productId: context.track.actualProductId,
            requestedProductId: context.track.requestedProductId, stationId: current.stationId,
            playbackSessionId: context.playbackSessionId, sourceType: current.product.sourceType,
            sourceId: current.product.sourceId, startedAt: now, endedAt: now,
            startPosition: rounded(position), endPosition: rounded(position), offline: context.track.offline, actions: [])
        current.play = event
        active = current
        persist(event, closing: false)
    }

    /// Ends the active product's play event (if it started) at `position` or where playback is.
    func endActivePlay(at position: Double? = nil) {
        guard var current = active, var event = current.play else { return }
        event.endedAt = PlayEvent.timestamp()
        event.endPosition = rounded(position ?? assetPosition ?? event.endPosition)
        current.play = nil
        active = current
        persist(event, closing: true)
    }

    func recordAction(_ type: String, position: Double? = nil, from: Double? = nil) {
        guard var current = active, var event = current.play else { return }
        event.actions.append(PlayEvent.Action(type: type, at: PlayEvent.timestamp(),
                                              position: rounded(position ?? assetPosition ?? 0), from: from.map(rounded)))
        current.play = event
        active = current
    }

    /// Saves the open play's progress so far (called every `playProgressSeconds`): after a
    /// kill -9 the event closes at the last saved point.
    func saveProgress() {
        guard var current = active, var event = current.play else { return }
        event.endedAt = PlayEvent.timestamp()
        event.endPosition = rounded(assetPosition ?? event.endPosition)
        current.play = event
        active = current
        persist(event, closing: false)
    }

    /// Queues the event for `playerPlays`, in order (a progress save never overtakes the close).
    private func persist(_ event: PlayEvent, closing: Bool) {
        playWrites.yield(PlayWrite(event: event, closing: closing))
    }

    private func rounded(_ seconds: Double) -> Double { (seconds * 1000).rounded() / 1000 }
}

/// One write of a play event, applied in order by `PlaybackEngine.writePlays()`.
struct PlayWrite: Sendable {
    var event: PlayEvent
    var closing: Bool
}

extension PlaybackEngine {
    /// Applies queued play-event writes one after another, off the actor; closed events are
    /// then offered to the reporter. A failed write is logged: the play itself goes on.
    nonisolated func writePlays(_ writes: AsyncStream<PlayWrite>) async {
        for await write in writes {
            do {
                let store = try await plays()
                if write.closing { try await store.close(write.event) } else { try await store.progress(write.event) }
                if write.closing { sender?.nudge() }
            } catch {
                logger.error("cannot store a play event", metadata: ["eventId": "\(write.event.eventId)", "error": "\(error)"])
            }
        }
    }
}
