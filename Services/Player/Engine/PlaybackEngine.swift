import Foundation
import Logging
import MediaDecoder
import OriginClient
import StateDB
import Wire

/// TIDAL's PlaybackEngine: one playback state, one active product, at most one next product,
/// and the events that tell clients about every change. All of it lives in this actor; the
/// audio itself moves on the pipeline's two threads, which report back through `handle(_:)`.
actor PlaybackEngine {
    struct Active {
        var product: MediaProduct
        var token: TrackToken
        var stationId: String?
        /// Nil while the source is being resolved.
        var track: ResolvedTrack?
        var context: PlaybackContext?
        /// The track's job went to the pipeline.
        var submitted = false
        /// Where playback starts when it is submitted (a seek before play).
        var startPosition: Double = 0
        /// Its `MediaProductTransition` was published. Until then clients know only `previous`.
        var announced = false
        /// What clients heard of as active before this product.
        var previous: MediaProduct?
        /// Its first frame reached the device.
        var sounded = false
        /// Its source waits for bytes (a stream, a file still downloading).
        var sourceStalled = false
        /// It has waited for its first bytes past `silentStartGrace`: nothing can be heard (STALLED).
        var sourceWaiting = false
        /// When it was asked for (a load, or the end of the product before it).
        var requestedAt: ContinuousClock.Instant = .now
        /// Asked for by a load (TIDAL's explicit transition), not reached by playing on.
        var explicitStart = true
        /// Its play event and its Streaming Metrics session.
        var recording = PlayRecording()
    }

    /// The product clients last heard of as active: the active one once its transition was
    /// published, else the one before it (a product skipped while still being resolved was
    /// never announced, so the next transition must not name it as the previous one).
    var announcedProduct: MediaProduct? {
        guard let active else { return nil }
        return active.announced ? active.product : active.previous
    }

    struct Next {
        var product: MediaProduct
        var token: TrackToken
        var stationId: String?
        var track: ResolvedTrack?
        /// Resolution failed: raised once this product becomes the active one.
        var failure: (name: String, message: String)?
        /// Its job is queued in the pipeline behind the active one (gapless).
        var handedOver = false
        /// What its decoder found in the file, when it opened before the transition.
        var opened: AudioFormatInfo?
    }

    struct StationCursor {
        var id: String
        var name: String
        /// An offline station's items with a verified file, in station order; a streaming
        /// station's items as its play queue gave them so far.
        var items: [StationItem]
        /// Index in `items` of the active product.
        var index: Int
        /// Items come from the origin's play queue and are streamed.
        var streaming: Bool
    }

    let pipeline: PlaybackPipeline
    let hub: EventHub
    let logger: Logger
    let source: any TrackSource
    let catalog: @Sendable () async throws -> StateDB
    let playWrites: AsyncStream<PlayWrite>.Continuation
    let playWriteQueue: AsyncStream<PlayWrite>
    /// Stamps play events with trusted time.
    let playClock: PlayClock

    private(set) var state: PlaybackState = .idle
    var active: Active?
    var next: Next?
    var station: StationCursor?
    /// Whether the app wants sound (play) or not (pause); kept across transitions.
    var wantPlaying = false
    var config = PlayerConfig()
    var origin: OriginClient?
    var availability = Availability.unknown
    var configLoaded = false
    private var lastToken: TrackToken = 0
    /// Resolutions in flight, by the token they resolve. One whose token is neither active nor
    /// next any more is cancelled: with the origin unreachable a stream's playbackinfo would
    /// otherwise be retried for ever after the app moved on.
    private var resolving: [TrackToken: Task<Void, Never>] = [:]
    /// When the last `play` arrived, for the play→first-frame latency in status.
    var playRequestedAt: ContinuousClock.Instant?
    /// The streaming session's keeper, told whether a stream plays (nil without an origin).
    var privilege: StreamingPrivilege?
    /// The downloader: the network type (for the streaming quality), and who is told offline mode.
    var downloader: DownloaderLink?
    /// A streaming station's request for more items, while one is out.
    var stationFetch: Task<Void, Never>?
    /// How loaded products started, for callers who wait to hear it.
    var outcomes = LoadOutcomes()
    /// Whether loaded products reached the device (first frame queued) or why not, for the
    /// callers of `station.tune` and `player.play`.
    var sounds = LoadOutcomes()
    /// Why the device is unavailable (ALSA's reason), while it is; the output thread keeps
    /// trying to open it.
    var outputTrouble: String?
    /// When the state last became PLAYING (the watchdog's silence is counted from then at most).
    var playingSince: ContinuousClock.Instant = .now
    /// The format of the product last made active, to tell when the next one differs.
    var heardFormat: AudioFormatKey?
    var lastStartLatency: Duration?

    init(
        pipeline: PlaybackPipeline, hub: EventHub, logger: Logger, source: any TrackSource,
        catalog: @escaping @Sendable () async throws -> StateDB, playClock: PlayClock = PlayClock(origin: nil)
    ) {
        self.pipeline = pipeline
        self.playClock = playClock
        self.hub = hub
        self.logger = logger
        self.source = source
        self.catalog = catalog
        (playWriteQueue, playWrites) = AsyncStream.makeStream(of: PlayWrite.self, bufferingPolicy: .unbounded)
    }

    var pipe: AudioPipe { pipeline.pipe }

    func newToken() -> TrackToken {
        lastToken += 1
        return lastToken
    }

    // MARK: Events

    func publish(_ type: String, _ data: JSONValue) {
        _ = hub.publish(topic: "player", type: type, data: data)
    }

    /// The one place the playback state changes; one event per change.
    func setState(_ new: PlaybackState) {
        guard new != state else { return }
        let old = state
        state = new
        if new == .playing { playingSince = .now }
        if new == .stalled || old == .stalled { noteStall(stalled: new == .stalled) }
        publish("PlaybackStateChanged", ["playbackState": .string(new.rawValue)])
        syncPrivilege()
    }

    /// The transition to `active` (nil: playback ended), with the display metadata of what now
    /// plays; a product of another format than the one heard before also gets `PlaybackQualityChanged`.
    func publishTransition(previous: MediaProduct?, active: Active?) {
        var fields: [String: JSONValue] = [
            "previousMediaProduct": previous?.json ?? .null,
            "activeMediaProduct": active?.product.json ?? .null,
            "playbackContext": active?.context?.json ?? .null,
        ]
        fields.merge(TrackInfo.displayFields(of: active?.context?.track)) { current, _ in current }
        publish("MediaProductTransition", .object(fields))
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
            publish("PlaybackQualityChanged", ["playbackContext": context.json])
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
        if stationId == nil { station = nil }
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
            return
        }
        let token = newToken()
        next = Next(product: product, token: token, stationId: stationId)
        if current.submitted { pipe.expectNext(after: current.token) }
        startResolving(token) { await $0.resolveNext(token: token) }
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
        if station != nil {
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
        station = nil
        stationFetch?.cancel()
        stationFetch = nil
        wantPlaying = false
        heardFormat = nil
    }

    // MARK: Resolution

    private func resolveActive(token: TrackToken, previous: MediaProduct?) async {
        guard let product = active?.product else { return }
        let config = await currentConfig()
        do {
            var track = try await source.resolve(
                productId: product.productId, offlineMode: config.offlineMode,
                quality: await streamingQuality(config), events: sourceEvents(token))
            guard var current = active, current.token == token else { return track.close() }
            fillDisplay(&track, product)
            current.track = track
            current.context = PlaybackContext(
                track: track.info, playbackSessionId: UUID().uuidString.lowercased(),
                referenceId: product.referenceId, startAssetPosition: current.startPosition)
            active = current
            startSession()
            if track.info.offline { watchValidity(token, productId: product.productId) }
            publishTransition(previous: previous, active: current)
            if wantPlaying && state == .notPlaying { setState(soundingState) }
            stationItemStarted(current)
            submitActive()
        } catch {
            guard active?.token == token else { return }
            fail(error)
        }
    }

    private func resolveNext(token: TrackToken) async {
        guard let product = next?.product else { return }
        let config = await currentConfig()
        do {
            var track = try await source.resolve(
                productId: product.productId, offlineMode: config.offlineMode,
                quality: await streamingQuality(config), events: sourceEvents(token))
            guard active?.token == token || next?.token == token else { return track.close() }
            fillDisplay(&track, product)
            if track.info.offline { watchValidity(token, productId: product.productId) }
            if var current = active, current.token == token, current.track == nil {
                // It became the active product while being resolved: start it now.
                current.track = track
                current.context = PlaybackContext(
                    track: track.info, playbackSessionId: UUID().uuidString.lowercased(),
                    referenceId: product.referenceId, startAssetPosition: 0)
                active = current
                startSession()
                noteFormat(current.context)
                syncPrivilege()
                submitActive()
                return
            }
            guard next?.token == token else { return }
            next?.track = track
            handOverNext()
        } catch {
            if active?.token == token {
                fail(error)
            } else if next?.token == token {
                next?.failure = PlayerError.describe(error)
                // Let the active track end; the failure is raised when this one becomes active.
                if let current = active, current.submitted { _ = pipe.setNext(nil, after: current.token) }
            }
        }
    }

    /// A station item's title, artist and album from the station's list where its source named none.
    private func fillDisplay(_ track: inout ResolvedTrack, _ product: MediaProduct) {
        guard let listed = stationDisplay(for: product.productId) else { return }
        track.info.display = track.info.display.filled(from: listed)
    }

    /// Sends the active track to the pipeline, paused unless the app wants sound, so that it
    /// is decoded and buffered ahead and `play` starts at once.
    func submitActive() {
        guard var current = active, let track = current.track, !current.submitted else { return }
        current.submitted = true
        active = current
        pipe.setPaused(!wantPlaying)
        var jobs = [track.job(current.token, at: current.startPosition)]
        // Whose end must wait for a track still being resolved. Given to the pipe together with
        // the jobs: set a moment later, the decoder and the device could already be past it.
        var expecting: TrackToken?
        if var queued = next, queued.failure == nil {
            if let nextTrack = queued.track {
                jobs.append(nextTrack.job(queued.token))
                queued.handedOver = true
                next = queued
                if stationHasItem(after: queued.token) { expecting = queued.token }
            } else {
                expecting = current.token
            }
        } else if next == nil, station?.streaming == true, stationFetch != nil {
            // A streaming station whose next items are still being asked for: the end waits for
            // them (STALLED if it comes first) rather than ending the station.
            expecting = current.token
        }
        pipe.replace(jobs: jobs, expecting: expecting)
    }

    /// Queues the resolved next product behind the active one in the pipeline (gapless).
    func handOverNext() {
        guard let current = active, current.submitted, var queued = next, let track = queued.track, !queued.handedOver else { return }
        if pipe.setNext(track.job(queued.token), after: current.token, expectingAfterIt: stationHasItem(after: queued.token)) {
            queued.handedOver = true
            next = queued
        }
    }

    /// Where a source's stall and failure reports go: the pipeline's ordered event stream.
    func sourceEvents(_ token: TrackToken) -> @Sendable (ByteSourceEvent) -> Void {
        let pipeline = pipeline
        return { pipeline.report(.source(token, $0)) }
    }

    /// Releases the bytes of the active and next tracks (after the pipeline was stopped), so a
    /// decoder waiting on a stalled source gives up at once.
    func abandonTracks() {
        active?.track?.close()
        next?.track?.close()
    }

    /// A station always has its following item coming: once the next item (`token`) is queued
    /// in the pipeline, its end waits for the one after (set when it becomes active), so every
    /// border of a station is gapless however far ahead the decoder runs.
    func stationHasItem(after token: TrackToken) -> Bool {
        guard let cursor = station, next?.token == token else { return false }
        // A streaming station's queue is asked for more before it runs out (released if it cannot be).
        return cursor.streaming || cursor.index + 2 < cursor.items.count
    }

    func currentConfig() async -> PlayerConfig {
        // Re-checked after the awaits: a concurrent load or a player.config.set may have won.
        if !configLoaded, let catalog = try? await catalog(), let loaded = try? await PlayerConfig.load(from: catalog), !configLoaded {
            config = loaded
            configLoaded = true
            pipe.loudnessSettings = LoudnessSettings(loaded)
        }
        return config
    }
}
