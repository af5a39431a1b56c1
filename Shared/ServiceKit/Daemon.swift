import BlockingIO
import Foundation
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import StateDB
import Systemd
import Wire

/// What a service's `build` step gets: its settings, logger, event hub and the catalog.
public struct DaemonContext: Sendable {
    public let settings: ServiceSettings
    public let logger: Logger
    public let hub: EventHub
    public let startedAt: ContinuousClock.Instant
    let catalogTask: Task<StateDB, Error>

    /// The catalog, once opened. Opening happens after READY=1 so activation never waits
    /// on disk work; a method that needs the catalog awaits it here.
    public func catalog() async throws(DaemonError) -> StateDB {
        do {
            return try await catalogTask.value
        } catch {
            throw DaemonError(.catalogUnavailable, "The catalog could not be opened: \(error)")
        }
    }

    /// Warns about the keys of this service's config section that `known` does not list.
    public func warnAboutUnknownKeys(known: Set<String>) {
        Self.warnAbout(unknownKeys: settings.config.unknownKeys(inSection: settings.name, known: known), logger: logger)
    }

    static func warnAbout(unknownKeys: [String], logger: Logger) {
        guard !unknownKeys.isEmpty else { return }
        logger.warning(
            "config file has keys Cassette does not read; check their spelling",
            metadata: ["keys": "\(unknownKeys.joined(separator: ", "))"])
    }
}

/// A service's own fields of `service.status`.
public enum StatusFields: Sendable {
    /// Read on the spot, under locks: the call is answered on the connection's event loop, with
    /// no task (while the catalog is open and the health check recent).
    case now(@Sendable () -> [String: JSONValue])
    /// Gathered by awaiting (actors, the catalog): every call runs as a task.
    case awaited(@Sendable () async -> [String: JSONValue])
}

/// What a service contributes: its methods, its long-running parts, its status fields, the
/// one line the service manager shows for it (`STATUS=`, see `StatusLine`) and its own part of
/// the watchdog's health check.
public struct DaemonParts: Sendable {
    public var router: RPCRouter
    public var services: [any Service]
    public var statusLine: (@Sendable () async -> String)?
    public var status: StatusFields
    /// Asked before every watchdog ping, after the common checks passed: nil when the service
    /// does its work, else why it is wedged (logged; the ping is withheld, so systemd restarts it).
    public var wedged: (@Sendable () async -> String?)?
    /// Asked in every health round (`HealthMonitor`, every few seconds): what keeps the service
    /// from being fit to keep, one line each in words; empty when nothing does. Unlike
    /// `wedged`, a problem here does not withhold the watchdog's ping.
    public var healthProblems: (@Sendable () async -> [String])?
    /// The service's own OpenMetrics families (gauges), for `service.metrics` and the metrics file.
    public var metrics: (@Sendable () async -> [MetricFamily])?
    /// The service's counters that survive restarts (`cassette_<name>_total`).
    public var totals: [MetricTotal]

    public init(
        router: RPCRouter = RPCRouter(), services: [any Service] = [],
        statusLine: (@Sendable () async -> String)? = nil,
        status: StatusFields = .now({ [:] }),
        wedged: (@Sendable () async -> String?)? = nil,
        healthProblems: (@Sendable () async -> [String])? = nil,
        metrics: (@Sendable () async -> [MetricFamily])? = nil,
        totals: [MetricTotal] = []
    ) {
        self.router = router
        self.services = services
        self.statusLine = statusLine
        self.status = status
        self.wedged = wedged
        self.healthProblems = healthProblems
        self.metrics = metrics
        self.totals = totals
    }
}

/// Runs one Cassette service: listener, READY/WATCHDOG/STOPPING, graceful SIGTERM.
///
/// The same `run` is used by the binaries and (through them) by the integration tests, so
/// what is tested is what ships.
public enum Daemon {
    /// For the daemons' `--version` (`CommandConfiguration(version:)`).
    public static let version = CassetteVersion.string

    public static func run(
        service name: String, options: CommonOptions,
        build: @escaping @Sendable (DaemonContext) async throws -> DaemonParts
    ) async -> Int32 {
        // Before anything starts a thread: NIO's singletons read their sizes at first use.
        ProcessTuning.apply()
        // Whatever umask the service was started with, what it creates is closed to other
        // users (the units set 0027 too); folders and the socket get explicit modes besides.
        umask(umask(0o027) | 0o027)
        let settings: ServiceSettings
        do {
            settings = try ServiceSettings.resolve(service: name, options: options)
        } catch {
            FileHandle.standardError.write(Data("\(name): \(error)\n".utf8))
            return error.exitCode
        }
        LogBootstrap.bootstrap(label: "cassette-\(name)", level: Logger.Level(rawValue: settings.logLevel) ?? .info)
        var logger = Logger(label: "cassette.\(name)")
        logger[metadataKey: "service"] = "\(name)"
        DaemonContext.warnAbout(unknownKeys: settings.config.unknownKeys, logger: logger)
        do {
            try await runResolved(settings: settings, logger: logger, build: build)
            logger.info("stopped", metadata: LogMessageID.stopped.metadata)
            return 0
        } catch let error as DaemonError {
            logger.critical("cannot run", metadata: LogMessageID.cannotRun.metadata(["error": "\(error)"]))
            return error.exitCode
        } catch {
            logger.critical("failed", metadata: ["error": "\(error)"])
            return 1
        }
    }

    static func runResolved(
        settings: ServiceSettings, logger: Logger,
        build: @Sendable (DaemonContext) async throws -> DaemonParts
    ) async throws {
        let (source, socketGroup) = try await BlockingIO.run { try SocketListener.prepare(settings: settings, logger: logger) }
        let hub = EventHub(backlog: settings.limits.eventBacklog)
        let ready = ReadyGate()
        let opened = OpenedCatalog()
        let opener = CatalogOpener(stateDir: settings.stateDir, after: ready, opened: opened, logger: logger)
        let health = HealthCheck(catalog: opened)
        let context = DaemonContext(settings: settings, logger: logger, hub: hub, startedAt: .now, catalogTask: opener.task)
        let metricsSettings = try MetricsSettings(
            section: MetricsSettings.section(settings.config, service: settings.name),
            service: settings.name)
        let parts = try await build(context)
        let monitor = HealthMonitor(probe: health, opened: opened, problems: parts.healthProblems, wedged: parts.wedged)
        let metrics = MetricsPublisher(
            service: settings.name, totals: MetricsPublisher.commonTotals() + parts.totals,
            gauges: parts.metrics, health: monitor, catalog: { try await context.catalog() })
        var router = parts.router
        let statusBox = StatusBox(context: context)
        router.register(
            "service.status", takes: [],
            now: { _ in
                statusBox.renderNow(health: monitor, opened: opened, extra: parts.status)
            },
            later: { _ in
                await statusBox.render(health: monitor, extra: parts.status)
            })
        router.register("service.metrics", takes: []) { _ in
            ["text": .string(await metrics.render())]
        }
        let server = RPCServer(router: router, limits: settings.limits, logger: logger, hub: hub)
        statusBox.server = server
        let notifier = SystemdNotifier()
        let stop = StopRequest()
        var services: [any Service] = [
            ServerService(
                server: server, source: source, socketGroup: socketGroup,
                notifier: notifier, ready: ready, stop: stop, logger: logger)
        ]
        if let watchdog = WatchdogService(
            notifier: notifier, logger: logger, after: { await ready.wait() },
            isHealthy: {
                let verdict = await monitor.check()
                if let reason = verdict.wedged { logger.warning("wedged: \(reason)") }
                return verdict.alive
            })
        {
            services.append(watchdog)
        }
        services.append(HealthMonitorService(monitor: monitor, ready: ready, catalog: opener.task))
        services.append(MetricsService(publisher: metrics, settings: metricsSettings, ready: ready, logger: logger))
        if notifier.isEnabled, let text = parts.statusLine {
            services.append(StatusLine(notifier: notifier, ready: ready, text: text))
        }
        services.append(contentsOf: parts.services)
        services.append(StopRequestService(stop: stop))
        let group = ServiceGroup(
            configuration: .init(
                services: services.map { .init(service: $0, successTerminationBehavior: .gracefullyShutdownGroup) },
                gracefulShutdownSignals: [.sigterm, .sigint],
                cancellationSignals: [],
                logger: logger))
        try await run(group, stop: stop, logger: logger)
    }

    private enum GroupEnd { case finished, overran }

    /// Runs the group; once a stop was requested and `StopBudget.cancelAfter` passed, cancels
    /// it, and past `StopBudget.exitAfter` exits the process: a stop never hangs on work that
    /// ignores it. An error after such a cancellation is the stop's doing, not a failure.
    static func run(_ group: ServiceGroup, stop: StopRequest, logger: Logger) async throws {
        try await withThrowingTaskGroup(of: GroupEnd.self) { tasks in
            tasks.addTask {
                try await group.run()
                return .finished
            }
            tasks.addTask {
                guard await stop.requested() else { return .finished }
                do { try await Task.sleep(for: stop.remaining(of: StopBudget.cancelAfter)) } catch { return .finished }
                return .overran
            }
            guard try await tasks.next() == .overran else {
                tasks.cancelAll()
                return
            }
            logger.warning("stopping: still busy \(StopBudget.cancelAfter) after the stop request; cancelling what is left")
            let exitAfter = stop.remaining(of: StopBudget.exitAfter)
            Thread.detachNewThread {
                Thread.sleep(forTimeInterval: Double(exitAfter.components.seconds) + Double(exitAfter.components.attoseconds) / 1e18)
                logger.critical("stopping: something ignored its cancellation; exiting now")
                _exit(0)
            }
            tasks.cancelAll()
            do {
                while try await tasks.next() != nil {}
            } catch {
                logger.info("stopping: ended by cancellation", metadata: ["error": "\(error)"])
            }
        }
    }
}

/// Opens the catalog in the background once the service is listening.
final class CatalogOpener: Sendable {
    let task: Task<StateDB, Error>

    init(stateDir: String, after gate: ReadyGate, opened: OpenedCatalog, logger: Logger) {
        task = Task {
            // READY=1 goes out first: activation never waits on disk work.
            await gate.wait()
            guard gate.isOpen else { throw DaemonError(.socketUnavailable, "The service could not listen, so the catalog was not opened.") }
            // Opening may wait on another service's migration lock (flock) and does disk I/O:
            // keep that off Swift's cooperative threads.
            do {
                let catalog = try await BlockingIO.run { try StateDB(stateDirectory: stateDir) }
                if !catalog.unknownMigrations.isEmpty {
                    logger.notice(
                        "the catalog has migrations of a newer release (a rollback?); they are additive, so it is used as it is",
                        metadata: ["migrations": "\(catalog.unknownMigrations.joined(separator: ", "))"])
                }
                opened.set(catalog)
                return catalog
            } catch {
                opened.fail(error)
                throw error
            }
        }
    }
}

/// The listener as a ServiceLifecycle service: listen, READY=1, open the catalog, wait for
/// SIGTERM, STOPPING=1, let in-flight requests finish, close.
struct ServerService: Service {
    let server: RPCServer
    let source: ListenerSource
    let socketGroup: gid_t?
    let notifier: SystemdNotifier
    let ready: ReadyGate
    let stop: StopRequest
    let logger: Logger

    func run() async throws {
        do {
            try await listen()
        } catch {
            // Nothing that waits for READY (the catalog, the watchdog) may wait for ever.
            ready.abandon()
            throw error
        }
        notifier.ready(status: "listening")
        logger.info("listening", metadata: LogMessageID.listening.metadata(["socket": "\(source)", "pid": "\(getpid())"]))
        ready.open()
        try? await gracefulShutdown()
        notifier.stopping()
        logger.info("stopping: finishing in-flight requests", metadata: ["inFlight": "\(server.inFlightRequests)"])
        await server.shutdownGracefully(
            timeout: TimeAmount(stop.remaining(of: StopBudget.drain)),
            cancelGrace: TimeAmount(StopBudget.cancelGrace))
        SocketListener.cleanUp(source)
    }

    private func listen() async throws(DaemonError) {
        // umask 0117 while binding: the socket is born 0660, with no moment at the looser
        // mode a chmod after bind would leave. Nothing else creates files this early.
        // Restored as soon as the socket exists: the catalog, media folders and caches made
        // later need their search bits.
        let previousMask = umask(0o117)
        do {
            try await server.start(source)
            umask(previousMask)
        } catch {
            umask(previousMask)
            throw DaemonError(.socketUnavailable, "Cannot listen on \(source): \(error)")
        }
        try SocketListener.restrictPermissions(source, group: socketGroup)
    }
}
