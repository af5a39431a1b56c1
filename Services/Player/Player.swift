import AudioOutput
import BlockingIO
import Catalog
import HTTPClient
import Logging
import OriginClient
import ServiceKit
import ServiceLifecycle
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
        let audio = (device: flags.device ?? settings.audioDevice ?? "default", pace: flags.pace ?? settings.audioPace ?? .device)
        let output = OutputSettings(device: audio.device, pacing: audio.pace == .realtime ? .realtime : .device,
                                    bufferMilliseconds: settings.bufferMilliseconds,
                                    periodMilliseconds: settings.periodMilliseconds)
        let pipeline = PlaybackPipeline(output: output, aheadBytes: settings.aheadBytes)
        let catalog: @Sendable () async throws -> Catalog = { try await context.catalog() }
        let plays: @Sendable () async throws -> PlayLogStore = { PlayLogStore(catalog: try await catalog()) }
        let reporterSocket = context.settings.runtimeDir + "/reporter.sock"
        let senderWakeup = Wakeup()
        let writer = PlayLogWriter(store: plays, retryInterval: .seconds(settings.playLogRetrySeconds),
                                   reporterSocket: reporterSocket, sender: senderWakeup, logger: context.logger)
        let sender = PlayLogSender(socketPath: reporterSocket, retryInterval: .seconds(settings.playLogRetrySeconds),
                                   wakeup: senderWakeup, writer: writer, logger: context.logger, store: plays)
        let origin = try makeOrigin(context.settings)
        let cacheDirectory = context.settings.stateDir + "/cache/http"
        let cache = try await BlockingIO.run { try HTTPCache(directory: cacheDirectory, maxBytes: settings.httpCacheBytes) }
        let source = ResolverTrackSource(catalog: catalog, mediaDirectory: context.settings.stateDir + "/media",
                                         origin: origin, cache: cache)
        let engine = PlaybackEngine(pipeline: pipeline, hub: context.hub, logger: context.logger, source: source,
                                    catalog: catalog)
        await engine.setOrigin(origin)
        var router = RPCRouter()
        PlayerMethods.register(on: &router, engine: engine)
        let service = PlaybackService(engine: engine, pipeline: pipeline, writer: writer, settings: settings, logger: context.logger)
        return DaemonParts(router: router, services: [service, sender], status: {
            ["audioDevice": .string(audio.device), "audioPace": .string(audio.pace.rawValue), "playLog": await writer.status()]
        })
    }

    /// The origin to stream from and to ask about stations; nil when none is configured (the
    /// player then plays what the device holds and nothing else).
    static func makeOrigin(_ settings: ServiceSettings) throws -> OriginClient? {
        guard let base = settings.origin else { return nil }
        let credentials = settings.clientToken.map { BasicCredentials(token: $0, secret: settings.clientSecret ?? "") }
        do {
            return try OriginClient(baseURL: base, credentials: credentials, requestTimeout: 10)
        } catch {
            throw DaemonError(.configInvalid, "\(error)")
        }
    }
}

/// Runs the engine for the life of the daemon: the play-event writer (which first closes plays a
/// killed run left open), the engine fed with the pipeline's events, play progress saved
/// periodically, and on SIGTERM the open play closed before the threads stop.
struct PlaybackService: Service {
    let engine: PlaybackEngine
    let pipeline: PlaybackPipeline
    let writer: PlayLogWriter
    let settings: PlayerSettings
    let logger: Logger

    func run() async throws {
        Task { await engine.checkAvailability() }
        let writer = Task { [writer, engine] in await writer.run(engine.playWriteQueue) }
        let ticker = Task {
            while !Task.isCancelled {
                try await Task.sleep(for: .seconds(settings.playProgressSeconds))
                await engine.saveProgress()
            }
        }
        await withGracefulShutdownHandler {
            await engine.run()
        } onGracefulShutdown: {
            pipeline.shutdown()
        }
        ticker.cancel()
        await engine.endActivePlay()
        engine.playWrites.finish()
        await writer.value
    }
}
