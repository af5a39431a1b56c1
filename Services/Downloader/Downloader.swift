import Catalog
import Foundation
import HTTPClient
import Logging
import OriginClient
import ServiceKit
import ServiceLifecycle
import Wire

/// The downloader's composition: the offline engine (queue, stations, products) behind its
/// methods, started once the catalog is open and reconciled with the media directory.
enum Downloader {
    @Sendable static func build(_ context: DaemonContext) async throws -> DaemonParts {
        let settings = DownloaderSettings(section: context.settings.config.downloader, logger: context.logger)
        let events = DownloaderEvents(hub: context.hub)
        let (origin, quickOrigin) = try makeOrigins(context.settings, settings)
        // Everything that needs the catalog waits for it here, never in `build` (it opens after READY).
        let core = Task { () throws -> DownloaderCore in
            let catalog = try await context.catalog()
            let store = MediaStore(stateDirectory: context.settings.stateDir)
            try store.prepare()
            let engine = DownloadEngine(catalog: catalog.pool, store: store,
                                        transfer: FileTransfer(origin: origin, store: store,
                                                               stallTimeout: settings.stallTimeoutSeconds),
                                        events: events, settings: settings, logger: context.logger)
            let report = try Reconciler(catalog: catalog.pool, store: store, events: events, settings: settings,
                                        logger: context.logger).run()
            context.logger.info("media reconciled: \(report.missing.count) missing, \(report.resumable) resumable, \(report.orphansRemoved.count) unknown files removed")
            return DownloaderCore(
                settings: settings, origin: origin, store: store, engine: engine,
                stations: StationSync(catalog: catalog.pool, origin: origin, quickOrigin: quickOrigin, store: store,
                                      engine: engine, events: events, logger: context.logger),
                products: OfflineProducts(catalog: catalog.pool, origin: origin, store: store, engine: engine,
                                          events: events, logger: context.logger))
        }
        var router = RPCRouter()
        DownloaderMethods.register(on: &router, core: core)
        return DaemonParts(router: router, services: [DownloaderService(core: core, logger: context.logger)], status: {
            var fields: [String: JSONValue] = ["origin": context.settings.origin.map { .string($0) } ?? .null,
                                               "maxParallel": .number(Double(settings.maxParallel))]
            if let ready = try? await core.value {
                fields["activeDownloads"] = .number(Double(await ready.engine.activeFileIds.count))
            }
            return fields
        })
    }

    /// The origin client for downloads and syncs (patient) and one for `stations.list` (answers at once).
    static func makeOrigins(_ service: ServiceSettings, _ settings: DownloaderSettings) throws -> (OriginClient?, OriginClient?) {
        guard let base = service.origin else { return (nil, nil) }
        let credentials = service.clientToken.map { BasicCredentials(token: $0, secret: service.clientSecret ?? "") }
        var configuration = HTTPClient.Configuration()
        // Downloads hold a transfer thread each; keep room for the JSON calls beside them.
        configuration.maxConcurrentTransfers = settings.maxParallel + 2
        configuration.maxIdleHandles = settings.maxParallel + 2
        let origin = try OriginClient(baseURL: base, credentials: credentials, configuration: configuration)
        var quick = HTTPClient.Configuration()
        quick.connectTimeoutSeconds = 2
        let quickOrigin = try OriginClient(baseURL: base, credentials: credentials, configuration: quick, requestTimeout: 3)
        return (origin, quickOrigin)
    }
}

/// The parts that exist once the catalog is open.
struct DownloaderCore: Sendable {
    let settings: DownloaderSettings
    let origin: OriginClient?
    let store: MediaStore
    let engine: DownloadEngine
    let stations: StationSync
    let products: OfflineProducts

    /// The time used for validity: the origin's last server time carried forward on the boot
    /// clock when there is one (ORIGIN-API: never the device clock alone), else the device clock.
    var trustedNow: Date {
        guard let sample = origin?.lastServerTime else { return Date() }
        let elapsed = Double(ServerTimeSample.bootClockNanos() &- sample.bootNanos) / 1e9
        return sample.serverTime.addingTimeInterval(max(0, elapsed))
    }
}

/// Runs the queue: starts what the catalog says is wanted, re-syncs held stations at start and
/// every `resyncIntervalSeconds`, and on SIGTERM stops transfers (their bytes stay for next time).
struct DownloaderService: Service {
    let core: Task<DownloaderCore, Error>
    let logger: Logger

    func run() async throws {
        let core = try await core.value
        await core.engine.kick()
        let resync = Task {
            while !Task.isCancelled {
                await core.stations.resyncAll()
                try? await Task.sleep(nanoseconds: UInt64(core.settings.resyncIntervalSeconds * 1e9))
            }
        }
        try? await gracefulShutdown()
        resync.cancel()
        await core.engine.stop()
    }
}
