import AudioOutput
import BlockingIO
import HTTPClient
import Logging
import OriginClient
import Pacing
import ServiceKit
import ServiceLifecycle
import StateDB
import Wire

/// The player's composition: the audio pipeline (decode and output threads), the
/// PlaybackEngine actor over it, the play-log hand-over to the reporter, and the methods.
enum Player {
    /// The audio flags as given; nil where the command line left them out.
    struct AudioFlags: Sendable {
        var device: String?
        var pace: AudioPace?
    }

    static func build(_ context: DaemonContext, audio flags: AudioFlags) async throws -> DaemonParts {
        let settings = try PlayerSettings(section: context.settings.config.player)
        context.warnAboutUnknownKeys(known: PlayerSettings.keys)
        let audio = (device: flags.device ?? settings.audioDevice ?? "default", pace: flags.pace ?? settings.audioPace ?? .device)
        let output = OutputSettings(
            device: audio.device, pacing: audio.pace == .realtime ? .realtime : .device,
            bufferMilliseconds: settings.bufferMilliseconds,
            periodMilliseconds: settings.periodMilliseconds)
        let pipeline = PlaybackPipeline(output: output, aheadBytes: settings.aheadBytes)
        let catalog: @Sendable () async throws -> StateDB = { try await context.catalog() }
        let plays: @Sendable () async throws -> PlayLogStore = { PlayLogStore(catalog: try await catalog()) }
        let reporterSocket = context.settings.runtimeDir + "/reporter.sock"
        let senderWakeup = Doorbell<Ring>()
        let writer = PlayLogWriter(
            store: plays, retryInterval: .seconds(settings.playLogRetrySeconds),
            reporterSocket: reporterSocket, sender: senderWakeup, logger: context.logger)
        let sender = PlayLogSender(
            socketPath: reporterSocket, retryInterval: .seconds(settings.playLogRetrySeconds),
            wakeup: senderWakeup, writer: writer, logger: context.logger, store: plays)
        let origin = try makeOrigin(context.settings)
        await origin?.openURLParser()
        let cacheDirectory = context.settings.stateDir + "/cache/http"
        let cache = try await BlockingIO.run { try HTTPCache(directory: cacheDirectory, maxBytes: settings.httpCacheBytes) }
        let source = ResolverTrackSource(
            catalog: catalog, mediaDirectory: context.settings.stateDir + "/media",
            origin: origin, cache: cache)
        // Its catalog anchor is read by the progress ticker, whose first round runs at start.
        let playClock = PlayClock(origin: origin)
        let engine = PlaybackEngine(
            pipeline: pipeline, hub: context.hub, logger: context.logger, source: source,
            catalog: catalog, playClock: playClock)
        await engine.setOrigin(origin)
        let privilege = origin.map { origin in
            StreamingPrivilege(origin: origin, device: .local(name: settings.deviceName), logger: context.logger) { other in
                await engine.privilegeRevoked(otherDevice: other)
            }
        }
        await engine.setLinks(
            privilege: privilege,
            downloader: DownloaderLink(
                socketPath: context.settings.runtimeDir + "/downloader.sock",
                logger: context.logger))
        var router = RPCRouter()
        PlayerMethods.register(on: &router, engine: engine)
        let mediaControl = MediaServerControl(port: settings.mediaServerPort)
        let stores: @Sendable () async throws -> MediaServerStore = { MediaServerStore(catalog: try await catalog(), origin: origin) }
        let mediaDirectory = context.settings.stateDir + "/media"
        PlayerMethods.registerMedia(
            on: &router, control: mediaControl,
            locator: MediaLocator(
                stores: stores, control: mediaControl, origin: origin,
                offlineMode: { await engine.currentConfig().offlineMode }))
        // The media server keeps what it read while the catalog is unchanged; the state directory
        // it watches exists by now (the HTTP cache is under it).
        let stateDir = context.settings.stateDir
        let stateChanges = await BlockingIO.run { StateDBChanges(stateDirectory: stateDir) }
        let mediaServer = MediaServerService(
            control: mediaControl,
            responder: MediaResponder(
                stores: stores, mediaDirectory: mediaDirectory, logger: context.logger,
                cache: MediaServerCache(changes: stateChanges), origin: origin),
            logger: context.logger)
        // The group stops its members in reverse order: the sender, the progress ticker, the
        // playback (closing the open play), and last the writer, which drains the queue.
        let progress = RepeatingService("play progress", parts: engine) { engine in
            if let opened = try? await catalog() { await playClock.refresh(from: opened) }
            await engine.saveProgress()
            return .seconds(settings.playProgressSeconds)
        }
        // The first look at the origin at start, then again and again, so that `availability`
        // follows the origin going away and coming back. Without an origin only the stations
        // on the device count: one look. A stop cuts a look off (the origin may never answer).
        let availability = RepeatingService("origin availability", parts: engine) { engine in
            let atLeast = await engine.checkAvailability()
            return origin == nil ? nil : .seconds(max(settings.availabilityCheckSeconds, atLeast))
        }
        var services: [any Service] = [
            PlayLogWriterService(writer: writer, engine: engine),
            PlaybackService(engine: engine, pipeline: pipeline), progress, sender, mediaServer,
            availability,
        ]
        // First in the group, so stopped last: a request to an origin that hangs cannot hold up
        // the stop of the playback and the play log, and the session is ended after the playback.
        if let privilege { services.insert(StreamingPrivilegeService(privilege: privilege), at: 0) }
        let mpris = MPRISBridge(choice: settings.mprisBus, logger: context.logger)
        services.append(MPRISService(bridge: mpris, engine: engine, hub: context.hub))
        let outputHealth = pipeline.outputHealth
        return DaemonParts(
            router: router, services: services, statusLine: { await engine.statusLine },
            status: .now({
                [
                    "audioDevice": .string(audio.device), "audioPace": .string(audio.pace.rawValue), "playLog": writer.status(),
                    "output": outputHealth.json, "mpris": mpris.status,
                ]
            }), wedged: { await engine.silenceWithoutReason() },
            healthProblems: PlayerFleet.problems(OutputProbe(health: outputHealth)),
            metrics: PlayerFleet.metrics(engine), totals: PlayerFleet.totals(outputHealth))
    }

    /// The origin to stream from and to ask about stations; nil when none is configured (the
    /// player then plays what the device holds and nothing else).
    static func makeOrigin(_ settings: ServiceSettings) throws -> OriginClient? {
        try settings.originClient(requestTimeout: 10)
    }
}

/// Runs the engine for the life of the daemon: the engine fed with the pipeline's events (and
/// the app's offline mode told to the downloader), and on SIGTERM the open play closed before the threads stop and
/// the play-event queue ended, so the writer, shut down after this, drains it.
struct PlaybackService: Service {
    let engine: PlaybackEngine
    let pipeline: PlaybackPipeline

    func run() async throws {
        async let offlineMode: Void = engine.tellDownloaderOfflineMode()
        await withGracefulShutdownHandler {
            await engine.run()
        } onGracefulShutdown: {
            pipeline.shutdown()
        }
        await engine.endActivePlay()
        engine.plays.finish()
        await offlineMode
    }
}

/// The play-event writer (which first closes plays a killed run left open) for the life of the
/// daemon. It ignores the graceful shutdown: it stops when `PlaybackService`, stopped before it,
/// ends the queue, and then drains what is left.
struct PlayLogWriterService: Service {
    let writer: PlayLogWriter
    let engine: PlaybackEngine

    func run() async throws {
        await writer.run(engine.plays.queue)
        // Done before the group came to it: returning now would count as an unexpected end.
        try? await gracefulShutdown()
    }
}
