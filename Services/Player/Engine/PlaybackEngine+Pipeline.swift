import Foundation
import MediaDecoder

extension PlaybackEngine {
    /// Consumes what the audio threads report, in order, until the pipeline shuts down.
    func run() async {
        for await event in pipeline.events {
            handle(event)
        }
    }

    func handle(_ event: PipelineEvent) {
        switch event {
        case .opened(let token, let info):
            opened(token, info)
        case .firstFrame(let token, let position):
            guard active?.token == token else { return }
            if let asked = playRequestedAt {
                lastStartLatency = .now - asked
                playRequestedAt = nil
            }
            active?.sounded = true
            active?.sourceWaiting = false
            sounds.settle(token, nil)
            if state == .stalled && outputTrouble == nil { setState(.playing) }
            // The play starts at the frame first heard, however late this event is handled.
            beginPlay(at: position)
        case .transitioned(let from, let to, let endPosition, let heard):
            guard active?.token == from, let queued = next, queued.token == to else { return }
            becomeActive(queued, previousEnd: endPosition)
            // Refused after the pipeline took it (its license ended at the border): not played.
            if let failure = queued.failure {
                fail(name: failure.name, message: failure.message)
                return
            }
            // A track queued behind another is played from its start, once its first frame is
            // heard: now at a gapless border, else when `firstFrame` says so.
            if heard {
                active?.sounded = true
                beginPlay(at: 0)
            }
        case .finished(let token, let position):
            guard active?.token == token else { return }
            finished(at: position)
        case .failed(let token, let name, let message):
            let (mapped, text) = PlayerError.mapDecodeFailure(name: name, message: message)
            if active?.token == token {
                fail(name: mapped, message: text)
            } else if next?.token == token {
                next?.failure = (mapped, text)
            }
        case .source(let token, let event):
            sourceEvent(token, event)
        case .outputFailed(let token, let name, let message):
            guard active?.token == token else { return }
            fail(name: PlayerError.Code.outputFailed.name, message: "\(name): \(message)")
        case .outputUnavailable(_, let reason):
            outputUnavailable(reason)
        case .outputRestored:
            outputRestored()
        case .starved(let token):
            guard active?.token == token, state == .playing else { return }
            setState(.stalled)
        case .fed:
            guard state == .stalled, outputTrouble == nil else { return }
            setState(wantPlaying ? .playing : .notPlaying)
        }
    }

    /// A growing file or a stream failed for good. Its waits for bytes are not the state: what
    /// is heard is (STALLED comes from the output running dry, `.starved`), so a source that is
    /// slow while buffered audio plays on leaves the state PLAYING.
    private func sourceEvent(_ token: TrackToken, _ event: ByteSourceEvent) {
        switch event {
        case .stalled, .resumed:
            guard active?.token == token else { return }
            logger.debug("source of the active product \(event == .stalled ? "waits for bytes" : "has bytes again")")
            active?.sourceStalled = event == .stalled
            if event == .resumed { active?.sourceWaiting = false }
            // Before its first frame nothing is buffered that could play on: a wait that lasts
            // is what is heard (nothing), STALLED. Short waits of a fast link are not reported.
            if event == .stalled, active?.sounded == false {
                Task {
                    try? await Task.sleep(for: Self.silentStartGrace)
                    self.firstBytesStillLate(token)
                }
            }
        case .failed(let name, let message):
            if active?.token == token {
                fail(name: name, message: message)
            } else if next?.token == token {
                next?.failure = (name, message)
            }
        }
    }

    /// How long the active product's source may wait for its first bytes before STALLED.
    static let silentStartGrace: Duration = .milliseconds(500)

    private func firstBytesStillLate(_ token: TrackToken) {
        guard var current = active, current.token == token, current.sourceStalled, !current.sounded else { return }
        current.sourceWaiting = true
        active = current
        if state == .playing { setState(.stalled) }
    }

    /// The decoder saw what the file really is: fills what the catalog did not say, and tells
    /// clients when the quality differs from what the context announced.
    /// The next product's decoder opens ahead of its transition: kept until it becomes active.
    private func opened(_ token: TrackToken, _ info: AudioFormatInfo) {
        if next?.token == token {
            next?.opened = info
            return
        }
        guard var current = active, current.token == token, var context = current.context else { return }
        outcomes.settle(token, nil)
        let changed = context.track.adopt(info)
        current.context = context
        active = current
        heardFormat = context.track.format
        if changed { events.publish(.playbackQualityChanged(context)) }
    }

    /// The active product played to its end with nothing queued behind it in the pipeline.
    private func finished(at position: Double) {
        if let queued = next {
            becomeActive(queued, previousEnd: position)
            if let failure = queued.failure {
                fail(name: failure.name, message: failure.message)
            } else if !queued.handedOver {
                // setNext came too late to be queued gaplessly: start it now.
                submitActive()
            }
            return
        }
        if station.isPlaying, stationAdvanceIfMore(keepPlaying: true) { return }
        let previous = announcedProduct
        endActivePlay(at: position, reason: .complete)
        pipe.stop()
        abandonTracks()
        active = nil
        station.leave()
        wantPlaying = false
        // No transition when clients never heard of a product (one skipped before it resolved).
        if previous != nil { publishTransition(previous: previous, active: nil) }
        setState(.idle)
    }

    /// Implicit transition: `queued` becomes the active product.
    func becomeActive(_ queued: Next, previousEnd: Double?) {
        let previous = announcedProduct
        endActivePlay(at: previousEnd, reason: .complete)
        active?.track?.close()
        // Already opened behind the previous one: nobody need wait for it to start.
        if queued.failure == nil, queued.track != nil { outcomes.settle(queued.token, nil) }
        if let replaced = active?.token { sounds.settle(replaced, nil) }
        var current = Active(product: queued.product, token: queued.token, stationId: queued.stationId, previous: previous)
        current.explicitStart = false
        current.track = queued.track
        current.submitted = queued.handedOver
        if let track = queued.track {
            var info = track.info
            // What the decoder found is announced with the transition itself.
            if let opened = queued.opened { _ = info.adopt(opened) }
            current.context = PlaybackContext(track: info, product: queued.product, startAssetPosition: 0)
        }
        active = current
        startSession()
        next = nil
        station.movedOn()
        publishTransition(previous: previous, active: current)
        stationItemStarted(current)
        queueNextStationItem()
    }
}
