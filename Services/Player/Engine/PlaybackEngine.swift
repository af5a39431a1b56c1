import Foundation
import Logging
import MediaDecoder
import OriginClient
import Pacing
import StateDB
import Wire

/// TIDAL's PlaybackEngine: the playback state machine. One playback state, one active product,
/// at most one next product, and the events that tell clients about every change. All of it
/// lives in this actor; the audio itself moves on the pipeline's two threads, which report back
/// through `handle(_:)`. What it plays of a station is `StationPlayer`'s; what it records of a
/// play goes through `PlayRecorder`; the streaming privilege is `StreamingPrivilege`'s, told
/// whether a stream plays.
actor PlaybackEngine {
    let pipeline: PlaybackPipeline
    let events: PlayerEvents
    let logger: Logger
    let source: any TrackSource
    let catalog: @Sendable () async throws -> StateDB
    /// Where the active product's play event and Streaming Metrics go.
    let plays: PlayRecorder
    /// Rung when what follows the active product changes without an event (`player.setNext`
    /// publishes none), for those who show whether a next can be played (MPRIS `CanGoNext`).
    nonisolated let nextChanges = Doorbell<Ring>()

    private(set) var state: PlaybackState = .idle
    var active: Active?
    var next: Next?
    /// The station playing, if one is.
    var station = StationPlayer()
    /// Whether the app wants sound (play) or not (pause); kept across transitions.
    var wantPlaying = false
    var config = PlayerConfig()
    var configLoaded = false
    private(set) var origin: OriginClient?
    var availability = Availability.unknown
    private var lastToken: TrackToken = 0
    /// Resolutions in flight, by the token they resolve. One whose token is neither active nor
    /// next any more is cancelled: with the origin unreachable a stream's playbackinfo would
    /// otherwise be retried for ever after the app moved on.
    private var resolving: [TrackToken: Task<Void, Never>] = [:]
    /// When the last `play` arrived, for the play→first-frame latency in status.
    var playRequestedAt: ContinuousClock.Instant?
    /// The streaming session's keeper, told whether a stream plays (nil without an origin).
    private(set) var privilege: StreamingPrivilege?
    /// The downloader: the network type (for the streaming quality), and who is told offline mode.
    private(set) var downloader: DownloaderLink?
    /// How loaded products started, for callers who wait to hear it.
    var outcomes = LoadOutcomes()
    /// Whether loaded products reached the device (first frame queued) or why not, for the
    /// callers of `station.tune` and `player.play`.
    var sounds = LoadOutcomes()
    /// Why the device is unavailable (ALSA's reason), while it is; the output thread keeps
    /// trying to open it.
    var outputTrouble: String?
    /// When the state last became PLAYING (the watchdog's silence is counted from then at most).
    private(set) var playingSince: ContinuousClock.Instant = .now
    /// The format of the product last made active, to tell when the next one differs.
    var heardFormat: AudioFormatKey?
    var lastStartLatency: Duration?

    init(
        pipeline: PlaybackPipeline, hub: EventHub, logger: Logger, source: any TrackSource,
        catalog: @escaping @Sendable () async throws -> StateDB, playClock: PlayClock = PlayClock(origin: nil)
    ) {
        self.pipeline = pipeline
        self.events = PlayerEvents(hub: hub)
        self.logger = logger
        self.source = source
        self.catalog = catalog
        self.plays = PlayRecorder(clock: playClock, events: events)
    }

    /// Set once at start, before any method is served.
    func setOrigin(_ origin: OriginClient?) { self.origin = origin }

    /// Set once at start, before any method is served.
    func setLinks(privilege: StreamingPrivilege?, downloader: DownloaderLink?) {
        self.privilege = privilege
        self.downloader = downloader
    }

    var pipe: AudioPipe { pipeline.pipe }

    func newToken() -> TrackToken {
        lastToken += 1
        return lastToken
    }

    // MARK: Events

    /// The one place the playback state changes; one event per change.
    func setState(_ new: PlaybackState) {
        guard new != state else { return }
        let old = state
        state = new
        if new == .playing { playingSince = .now }
        if new == .stalled || old == .stalled { noteStall(stalled: new == .stalled) }
        events.publish(.playbackStateChanged(new))
        syncPrivilege()
    }

    /// The transition to `active` (nil: playback ended), with the display metadata of what now
    /// plays; a product of another format than the one heard before also gets `PlaybackQualityChanged`.
    func publishTransition(previous: MediaProduct?, active: Active?) {
        events.publish(.mediaProductTransition(previous: previous, active: active?.product, context: active?.context))
        if let active, self.active?.token == active.token { self.active?.announced = true }
        if active == nil { heardFormat = nil }
        noteFormat(active?.context)
        syncPrivilege()
    }

    /// Publishes `PlaybackQualityChanged` when `context`'s format differs from the last one heard.
    func noteFormat(_ context: PlaybackContext?) {
        guard let context else { return }
        let format = context.track.format
        if let heard = heardFormat, heard != format {
            events.publish(.playbackQualityChanged(context))
        }
        heardFormat = format
    }

    // MARK: PlaybackEngine API

    /// Drops whatever was playing and makes `product` active at once (explicit transition).
    /// State becomes NOT_PLAYING unless `keepPlaying` (skip, station) keeps the current intent.
    @discardableResult
    func load(_ product: MediaProduct, stationId: String? = nil, keepPlaying: Bool = false) -> TrackToken {
        let previous = announcedProduct
        if let replaced = active?.token {
            outcomes.settle(replaced, nil)
            sounds.settle(replaced, nil)
        }
        endActivePlay()
        pipe.stop()
        abandonTracks()
        if stationId == nil { station.leave() }
        next = nil
        if !keepPlaying { wantPlaying = false }
        let token = newToken()
        active = Active(product: product, token: token, stationId: stationId, previous: previous)
        pipe.presetPosition(token: token, position: 0)
        // PLAYING is announced once the product is resolved (after its transition event), so
        // clients always hear of the product before they hear it plays.
        if !(keepPlaying && wantPlaying && state == .playing) { setState(.notPlaying) }
        startResolving(token) { await $0.resolveActive(token: token, previous: previous) }
        return token
    }

    func setNext(_ product: MediaProduct?, stationId: String? = nil) {
        guard state != .idle, let current = active else { return }
        guard let product else {
            next = nil
            if current.submitted { _ = pipe.setNext(nil, after: current.token) }
            cancelStaleResolutions()
            nextChanges.ring()
            return
        }
        let token = newToken()
        next = Next(product: product, token: token, stationId: stationId)
        if current.submitted { pipe.expectNext(after: current.token) }
        startResolving(token) { await $0.resolveNext(token: token) }
        nextChanges.ring()
    }

    func play() {
        guard state != .idle, active != nil else { return }
        let wasPaused = !wantPlaying
        wantPlaying = true
        if state == .notPlaying, active?.context != nil { setState(soundingState) }
        playRequestedAt = .now
        if wasPaused { recordAction("resume") }
        // After a revocation, playing a stream again takes the privilege back.
        syncPrivilege()
        if let current = active, current.track != nil, !current.submitted {
            submitActive()
        }
        pipe.setPaused(false)
    }

    func pause() {
        guard state != .idle, active != nil else { return }
        if wantPlaying { recordAction("pause") }
        wantPlaying = false
        pipe.setPaused(true)
        setState(.notPlaying)
        syncPrivilege()
    }

    func seek(to requested: Double) {
        guard state != .idle, var current = active else { return }
        var position = max(0, requested)
        if let duration = current.context?.track.durationSeconds { position = min(position, duration) }
        let from = assetPosition ?? 0
        guard let track = current.track, current.submitted else {
            current.startPosition = position
            active = current
            pipe.presetPosition(token: current.token, position: position)
            return
        }
        var nextJob: TrackJob?
        if var queued = next, queued.handedOver, let nextTrack = queued.track {
            nextJob = nextTrack.job(queued.token)
            queued.handedOver = true
            next = queued
        }
        pipe.seek(track.job(current.token, at: position), next: nextJob)
        pipe.presetPosition(token: current.token, position: position)
        recordAction("seek", position: position, from: from)
    }

    func skipToNext() {
        guard state != .idle, active != nil else { return }
        if station.isPlaying {
            stationAdvance()
            return
        }
        guard let queued = next else { return }
        load(queued.product, stationId: queued.stationId, keepPlaying: true)
    }

    func reset() {
        stopAndForget()
        setState(.idle)
    }

    /// Runs `body` as the resolution of `token`, after cancelling those nobody waits for.
    private func startResolving(_ token: TrackToken, _ body: @escaping @Sendable (PlaybackEngine) async -> Void) {
        cancelStaleResolutions()
        resolving[token] = Task {
            await body(self)
            self.resolutionEnded(token)
        }
    }

    private func resolutionEnded(_ token: TrackToken) {
        resolving[token] = nil
    }

    func cancelStaleResolutions() {
        for (token, task) in resolving where token != active?.token && token != next?.token {
            task.cancel()
            resolving[token] = nil
        }
    }

    /// Closes the open play, silences the pipeline and forgets the active, next and station
    /// state; the caller publishes what the app should hear about it.
    func stopAndForget() {
        if let token = active?.token {
            outcomes.settle(token, nil)
            sounds.settle(token, nil)
        }
        endActivePlay()
        pipe.stop()
        abandonTracks()
        forgetQueue()
        cancelStaleResolutions()
    }

    /// Forgets the active, next and station state (what `stopAndForget` and `fail` end with).
    func forgetQueue() {
        active = nil
        next = nil
        station.stop()
        wantPlaying = false
        heardFormat = nil
    }
}
