import Foundation

/// Where what the active product's `PlayRecording` returns goes: each record onto the play
/// log's queue, in order (a progress save never overtakes the close), which `PlayLogWriter`
/// drains and keeps until it is durable, in the catalog or with the reporter; each metric event
/// also published on topic `metrics` (a topic of its own, so that a subscriber of `player` hears
/// the PlaybackEngine's messages only). Records are stamped with trusted time (`PlayClock`).
struct PlayRecorder: Sendable {
    let clock: PlayClock
    /// What `PlayLogWriter` drains, until `finish`.
    let queue: AsyncStream<PlayWrite>
    private let writes: AsyncStream<PlayWrite>.Continuation
    private let events: PlayerEvents

    init(clock: PlayClock, events: PlayerEvents) {
        self.clock = clock
        self.events = events
        (queue, writes) = AsyncStream.makeStream(of: PlayWrite.self, bufferingPolicy: .unbounded)
    }

    /// Trusted time, to stamp records with.
    func now() -> Date { clock.now() }

    func record(_ records: [Recorded]) {
        for record in records {
            writes.yield(record.write)
            if let event = record.metric { events.publish(.metric(event)) }
        }
    }

    /// No more records come (the playback stopped): the writer drains what is queued and ends.
    func finish() {
        writes.finish()
    }
}
