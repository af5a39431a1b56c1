/// The active product's `PlayRecording` fed from the engine: the first frame heard, the
/// listener's actions, progress saves, stalls and the product's end, each at trusted time;
/// what it returns goes to the play log through `PlayRecorder`.
extension PlaybackEngine {
    /// The active product as its records name it, once resolved.
    private var subject: PlayRecording.Subject? {
        guard let current = active, let context = current.context else { return nil }
        return PlayRecording.Subject(product: current.product, context: context, stationId: current.stationId)
    }

    /// The first frame of the active product was heard: its play event starts now, durably,
    /// at `position` when the caller knows it, else where playback is.
    func beginPlay(at position: Double? = nil) {
        guard var current = active, let subject else { return }
        let writes = current.recording.begin(subject, at: position ?? assetPosition ?? current.startPosition, now: plays.now())
        active = current
        plays.record(writes)
    }

    /// Ends the active product's play event (if it started) at `position` or where playback is,
    /// then its playback session (`reason`: how it ended).
    func endActivePlay(at position: Double? = nil, reason: SessionEnd = .other) {
        guard var current = active else { return }
        let writes = current.recording.end(subject, at: position ?? assetPosition, reason: reason, now: plays.now())
        active = current
        plays.record(writes)
    }

    func recordAction(_ type: String, position: Double? = nil, from: Double? = nil) {
        // Read before `active` is modified: `assetPosition` reads it too.
        let position = position ?? assetPosition ?? 0
        let now = plays.now()
        active?.recording.action(type, position: position, from: from, now: now)
    }

    /// Saves the open play's progress so far (called every `playProgressSeconds`): after a
    /// kill -9 the event closes at the last saved point.
    func saveProgress() {
        guard var current = active else { return }
        let writes = current.recording.save(at: assetPosition, now: plays.now())
        active = current
        plays.record(writes)
    }

    /// The active product has its context: its metrics session starts, once.
    func startSession() {
        guard var current = active, let subject else { return }
        let writes = current.recording.startSession(
            subject, waited: current.requestedAt.duration(to: .now),
            explicit: current.explicitStart, offlineMode: config.offlineMode,
            now: plays.now())
        active = current
        plays.record(writes)
    }

    /// The state became STALLED (or left it): a stall of the active session opens (or closes).
    func noteStall(stalled: Bool) {
        let position = assetPosition
        let now = plays.now()
        active?.recording.stall(stalled, at: position, now: now)
    }
}
