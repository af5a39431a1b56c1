import BlockingIO
import Foundation
import HTTPClient
import Logging
import OriginClient
import Pacing
import ServiceKit
import ServiceLifecycle
import StateDB
import Wire

/// The downloader's composition: the offline engine (queue, stations, products) behind its
/// methods, started once the catalog is open and reconciled with the media directory.
enum Downloader {
    @Sendable static func build(_ context: DaemonContext) async throws -> DaemonParts {
        let settings = DownloaderSettings(section: context.settings.config.downloader, logger: context.logger)
        context.warnAboutUnknownKeys(known: DownloaderSettings.keys.union(DownloadPolicy.configKeys).union(MetricsSettings.keys))
        let events = DownloaderEvents(hub: context.hub)
        let offlineSwitch = OfflineSwitch()
        let (origin, quickOrigin) = try makeOrigins(context.settings, settings, offline: offlineSwitch)
        // Everything that needs the catalog waits for it here, never in `build` (it opens after READY).
        let core = Task { () throws -> DownloaderCore in
            await origin?.openURLParser()
            let catalog = try await context.catalog()
            // Events name each token's referenceId from the first one sent (the reconcile's).
            events.references.load(try await ProductStore(catalog: catalog).referenceIds())
            let store = MediaFolder(stateDirectory: context.settings.stateDir)
            try await BlockingIO.run { try store.prepare() }
            // The policy (config defaults, then what policy.set persisted), the network
            // monitor, the gate the engine asks before each file, and the enforcer for running ones.
            let policyStore = PolicyStore(catalog: catalog)
            let policy = await policyStore.load(
                defaults: DownloadPolicy.fromConfig(
                    context.settings.config.downloader,
                    maxParallel: settings.maxParallel, logger: context.logger))
            let monitor = await NetworkMonitor(sources: [NetworkManagerSource(), KernelRouteSource()], events: events, logger: context.logger)
            let gate = PolicyGate(
                catalog: catalog, store: store, events: events, logger: context.logger,
                policy: policy, network: await monitor.state, offlineSwitch: offlineSwitch)
            // The engine schedules transfers; products, stations and the policy hear how they
            // end. The queue's signal wakes it whenever a writer makes a file wanted.
            let stationProgress = StationProgress(
                catalog: catalog, events: events, maxAttempts: settings.maxAttempts,
                logger: context.logger)
            let (stagedVerified, staged) = AsyncStream.makeStream(of: Int64.self)
            let outcomes = TransferOutcomes(
                products: ProductTransfers(queue: DownloadQueueStore(catalog: catalog), events: events, logger: context.logger),
                stations: stationProgress, gate: gate, stagedVerified: staged, logger: context.logger)
            let engine = DownloadEngine(
                catalog: catalog, store: store,
                transfer: FileTransfer(
                    origin: origin, store: store,
                    stallTimeout: settings.stallTimeoutSeconds,
                    receiveRate: gate.receiveRate),
                gate: gate, listener: outcomes, settings: settings, maxParallel: settings.maxParallel,
                logger: context.logger)
            let queueSignal = try await QueueSignal.install(on: catalog)
            let enforcer = PolicyEnforcer(gate: gate, engine: engine, logger: context.logger)
            await monitor.onChange { state in
                gate.update(network: state)
                await enforcer.enforce()
            }
            let policyController = PolicyController(
                gate: gate, store: policyStore, monitor: monitor, engine: engine,
                enforcer: enforcer, events: events, logger: context.logger)
            let reconciler = Reconciler(catalog: catalog, store: store, events: events, settings: settings, logger: context.logger)
            let report = try await BlockingIO.run { try reconciler.run() }
            context.logger.info(
                "media reconciled: \(report.missing.count) missing, \(report.resumable) resumable, \(report.orphansRemoved.count) unknown files removed")
            let clock = TrustedTimeRecorder(catalog: catalog, origins: [origin, quickOrigin])
            await clock.adoptBoot()
            // Licenses are requested at the server's time when it gives none (LicenseClient).
            let licenses = origin.map { origin in LicenseClient(origin: origin, now: { await clock.now() }) }
            let revalidator = ProductRevalidator(
                catalog: catalog, origin: origin, licenses: licenses, store: store,
                engine: engine, events: events, clock: clock, logger: context.logger)
            // A re-offline whose file was verified just before a kill is switched now.
            await revalidator.promoteReady()
            // Station items that had failed are tried again at every start.
            let stations = StationSync(
                catalog: catalog, origin: origin, quickOrigin: quickOrigin, store: store,
                engine: engine, progress: stationProgress, events: events, logger: context.logger)
            await stations.requeueFailedAtStart()
            // Waits on a failing origin are not carried over a restart: those items are tried at once.
            await gate.releaseOriginWaits()
            // After the reconcile: setting it starts the queue.
            await engine.setMaxParallel(policy.maxParallel)
            let products = OfflineProducts(
                catalog: catalog, origin: origin, store: store, engine: engine,
                events: events, licenses: licenses, logger: context.logger)
            let catalogStore = ContentCatalogStore(catalog: catalog)
            let prepositioner = Prepositioner(
                store: catalogStore, products: products, gate: gate, engine: engine,
                settings: settings.catalog, events: events, logger: context.logger)
            let mirror = CatalogMirror(
                store: catalogStore, origin: origin, products: products, events: events,
                logger: context.logger, wake: { await prepositioner.wake() })
            return DownloaderCore(
                settings: settings, origin: origin, store: store, engine: engine, queueSignal: queueSignal,
                stagedVerified: stagedVerified,
                stations: stations,
                products: products,
                gate: gate, monitor: monitor, enforcer: enforcer, policy: policyController,
                estimate: Estimate(files: FileStore(catalog: catalog), origin: origin, gate: gate, store: store), clock: clock,
                offlineExtension: OfflineExtension(
                    catalog: catalog, origin: origin, store: store, engine: engine,
                    events: events, clock: clock, logger: context.logger),
                revalidator: revalidator, catalog: mirror, prepositioner: prepositioner)
        }
        var router = RPCRouter()
        DownloaderMethods.register(on: &router, core: core)
        CatalogMethods.register(on: &router, core: core)
        DownloaderFleet.register(on: &router, core: core, context: context)
        return DaemonParts(
            router: router,
            services: DownloaderServices.all(core: core, logger: context.logger)
                + [DownloaderFleet.silenceWatch(core: core, context: context, settings: settings, events: events)],
            statusLine: { await DownloaderStatusLine.text(core: core, context: context) },
            status: .awaited({
                var fields: [String: JSONValue] = [
                    "origin": context.settings.origin.map { .string($0) } ?? .null,
                    "maxParallel": .number(Double(settings.maxParallel)),
                ]
                if origin != nil { fields.merge(originAuthFields([origin, quickOrigin])) { $1 } }
                if let ready = try? await core.value {
                    fields["activeDownloads"] = .number(Double(await ready.engine.activeFileIds.count))
                    fields["maxParallel"] = .number(Double(await ready.engine.maxParallel))
                    fields["network"] = .string(ready.gate.network.type.rawValue)
                    fields["downloadsAllowed"] = .string(ready.gate.verdict.name)
                    fields["downloadWindow"] = ready.gate.policy.schedule.json(at: Date())
                    fields["contentCatalog"] = await ready.catalog.status()
                }
                return fields
            }), healthProblems: DownloaderFleet.problems(core: core, context: context),
            metrics: DownloaderFleet.metrics(core: core, context: context), totals: DownloaderFleet.totals())
    }

    /// `originAuth` for `service.status`: what the origin said of the credentials when it last
    /// answered an API request (`accepted`, `refused` with `originAuthError`, or `unknown`).
    static func originAuthFields(_ clients: [OriginClient?]) -> [String: JSONValue] {
        let answers = clients.compactMap { $0?.lastAuthAnswer }
        guard let last = answers.max(by: { $0.at < $1.at }) else { return ["originAuth": "unknown"] }
        guard !last.accepted, let error = last.error else { return ["originAuth": "accepted"] }
        return [
            "originAuth": "refused",
            "originAuthError": ["name": .string(error.name), "code": .number(Double(error.code)), "message": .string(error.message)],
        ]
    }

    /// The origin client for downloads and syncs (patient) and one for `stations.list` (answers at once).
    static func makeOrigins(
        _ service: ServiceSettings, _ settings: DownloaderSettings,
        offline: OfflineSwitch
    ) throws -> (OriginClient?, OriginClient?) {
        let origin = try service.originClient(offline: { offline.isOn }) { configuration in
            // Downloads hold a transfer thread each; keep room for the JSON calls beside them.
            configuration.maxConcurrentTransfers = settings.maxParallel + 2
            configuration.maxIdleHandles = settings.maxParallel + 2
            // Media go to the disk directly: they are fsynced before use anyway, so the page cache
            // would only add a copy and a writeback to wait for (docs/benchmarks.md). From 4 MiB a
            // body is hashed on its own thread too, so the transfer thread only receives and copies.
            configuration.downloadDirectBytes = 4 << 20
        }
        let quickOrigin = try service.originClient(requestTimeout: 3, offline: { offline.isOn }) { $0.connectTimeoutSeconds = 2 }
        return (origin, quickOrigin)
    }
}

/// The parts that exist once the catalog is open.
struct DownloaderCore: Sendable {
    let settings: DownloaderSettings
    let origin: OriginClient?
    let store: MediaFolder
    let engine: DownloadEngine
    /// Rings when a writer made a file wanted (`QueueSignal`); the queue service follows it.
    let queueSignal: Doorbell<Ring>
    /// Files of a staged re-offline that were verified; the re-validator switches products to them.
    let stagedVerified: AsyncStream<Int64>
    let stations: StationSync
    let products: OfflineProducts
    let gate: PolicyGate
    let monitor: NetworkMonitor
    let enforcer: PolicyEnforcer
    let policy: PolicyController
    let estimate: Estimate

    let clock: TrustedTimeRecorder
    /// Feed.fm: extending what is held, and expiring stations past their validity.
    let offlineExtension: OfflineExtension
    let revalidator: ProductRevalidator
    let catalog: CatalogMirror
    let prepositioner: Prepositioner

    /// The time used for validity: `TrustedClock` over the catalog, fed with every server time seen.
    func trustedNow() async -> Date { await clock.now() }
}

/// The downloader's background work, each loop a member of the service group: the queue
/// (started at once, stopped on SIGTERM with its bytes kept), the network monitor, the policy
/// enforcer, offline extension and expiry (Feed.fm), re-validation (TIDAL) and station re-sync.
enum DownloaderServices {
    static func all(core: Task<DownloaderCore, Error>, logger: Logger) -> [any Service] {
        [
            DownloadQueueService(core: core),
            // A re-offline switches to its new files as soon as they are verified.
            RepeatingService("re-offline switch", parts: core) { core in
                for await fileId in core.stagedVerified { await core.revalidator.fileVerified(fileId) }
                return nil
            },
            RepeatingService("network monitor", parts: core) { core in
                await core.monitor.refresh()
                return .seconds(core.monitor.pollSeconds)
            },
            RepeatingService("policy enforcer", parts: core) { core in
                await core.enforcer.enforce()
                return .seconds(1)
            },
            // Feed.fm: extend what is held at every start while online (unreachable: expiry still applies).
            RepeatingService("offline extension", parts: core) { core in
                guard !core.gate.policy.offlineMode else { return nil }
                do {
                    _ = try await core.offlineExtension.extend(retry: StationSync.quickPolicy)
                } catch is CancellationError {
                    // Cut off by the stop.
                } catch {
                    logger.info("offline extension at start failed: \(error)")
                }
                return nil
            },
            // Every server time the origin sends is persisted within a couple of seconds, and what
            // expired by the trusted time is applied as soon.
            RepeatingService("offline expiry", parts: core) { core in
                await core.clock.capture()
                do {
                    try await core.offlineExtension.expire()
                } catch is CancellationError {
                    return nil
                } catch {
                    logger.warning("offline expiry check failed: \(error)")
                }
                return .seconds(2)
            },
            // TIDAL: re-validate at start and every revalidateIntervalSeconds, within the policy
            // (background traffic: over cellular only where the policy allows all downloads).
            RepeatingService("re-validation", parts: core) { core in
                guard core.gate.allowsBackgroundTraffic else { return .seconds(5) }
                _ = await core.revalidator.round()
                return .seconds(core.settings.revalidateIntervalSeconds)
            },
            // The content catalog: at start, then every catalog.refreshSeconds (sooner after a failure).
            RepeatingService("catalog refresh", parts: core) { core in
                guard core.origin != nil else { return nil }
                do {
                    _ = try await core.catalog.refresh(retry: StationSync.quickPolicy)
                } catch is CancellationError {
                    return nil
                } catch {
                    logger.info("catalog refresh failed: \(error)")
                    return .seconds(max(min(30, core.settings.catalog.refreshSeconds), RetryPolicy.minimumDelay(after: error)))
                }
                return .seconds(core.settings.catalog.refreshSeconds)
            },
            RepeatingService("catalog prepositioning", parts: core) { core in
                await core.prepositioner.round()
            },
            RepeatingService("station re-sync", parts: core) { core in
                guard core.gate.allowsBackgroundTraffic else { return .seconds(5) }
                await core.stations.resyncAll()
                return .seconds(core.settings.resyncIntervalSeconds)
            },
        ]
    }
}

/// Runs the queue: starts what the catalog says is wanted, again whenever its signal rings, and
/// on SIGTERM stops transfers (their bytes stay for next time).
struct DownloadQueueService: Service {
    let core: Task<DownloaderCore, Error>

    func run() async throws {
        let core: DownloaderCore
        do {
            core = try await cancelWhenGracefulShutdown { try await self.core.value }
        } catch is CancellationError {
            return
        }
        await core.engine.kick()
        await cancelWhenGracefulShutdown { await core.engine.follow(core.queueSignal) }
        await core.engine.stop()
    }
}
