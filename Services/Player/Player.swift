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
        let sender = PlayLogSender(socketPath: context.settings.runtimeDir + "/reporter.sock",
                                   retryInterval: .seconds(settings.playLogRetrySeconds), logger: context.logger,
                                   store: { PlayLogStore(catalog: try await catalog()) })
        let origin = try makeOrigin(context.settings)
        let cacheDirectory = context.settings.stateDir + "/cache/http"
        let cache = try await BlockingIO.run { try HTTPCache(directory: cacheDirectory, maxBytes: settings.httpCacheBytes) }
        let source = ResolverTrackSource(catalog: catalog, mediaDirectory: context.settings.stateDir + "/media",
                                         origin: origin, cache: cache)
        let engine = PlaybackEngine(pipeline: pipeline, hub: context.hub, logger: context.logger, source: source,
                                    catalog: catalog, sender: sender)
        await engine.setOrigin(origin)
        var router = RPCRouter()
        PlayerMethods.register(on: &router, engine: engine)
        let service = PlaybackService(engine: engine, pipeline: pipeline, settings: settings, logger: context.logger)
        return DaemonParts(router: router, services: [service, sender], status: {
            ["audioDevice": .string(audio.device), "audioPace": .string(audio.pace.rawValue)]
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

/// Runs the engine for the life of the daemon: closes plays a killed run left open, feeds the
/// engine the pipeline's events, saves play progress periodically, and on SIGTERM closes the
/// open play before the threads stop.
struct PlaybackService: Service {
    let engine: PlaybackEngine
    let pipeline: PlaybackPipeline
    let settings: PlayerSettings
    let logger: Logger

    func run() async throws {
        if let store = try? await engine.plays() {
            let closed = (try? await store.closeLeftovers()) ?? 0
            if closed > 0 { logger.info("closed play events left open by the previous run", metadata: ["count": "\(closed)"]) }
            engine.sender?.nudge()
        }
        Task { await engine.checkAvailability() }
        let writer = Task { await engine.writePlays(engine.playWriteQueue) }
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
