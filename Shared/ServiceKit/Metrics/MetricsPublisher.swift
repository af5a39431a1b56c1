import BlockingIO
import Logging
import ServiceLifecycle
import StateDB

/// A service's OpenMetrics text (`service.metrics`, the metrics file): `cassette_up`, the
/// health verdict, the totals (with what earlier runs counted) and the service's own gauges.
final class MetricsPublisher: Sendable {
    let totals: MetricTotals
    private let gauges: (@Sendable () async -> [MetricFamily])?
    private let health: HealthMonitor
    private let catalog: @Sendable () async throws -> StateDB

    init(
        service: String, totals: [MetricTotal], gauges: (@Sendable () async -> [MetricFamily])?,
        health: HealthMonitor, catalog: @escaping @Sendable () async throws -> StateDB
    ) {
        self.totals = MetricTotals(service: service, totals: totals)
        self.gauges = gauges
        self.health = health
        self.catalog = catalog
    }

    /// The counters every service keeps, before its own.
    static func commonTotals() -> [MetricTotal] {
        let atStart = ProcessIO.bytesWritten()
        return [
            MetricTotal(
                "cassette_storage_bytes_written",
                help: "Bytes this service wrote to the device's storage (media, catalog and its WAL, metrics file), by the kernel's count.",
                persistStep: 1_048_576
            ) { max(0, ProcessIO.bytesWritten() - atStart) }
        ]
    }

    /// The text, with `up` as `cassette_up` (0 in the file written at stop).
    func render(up: Bool = true) async -> String {
        // What earlier runs counted, once the catalog is open; a catalog that cannot open
        // leaves the totals counting from this run (and the health verdict says why).
        if !totals.isLoaded, let catalog = try? await catalog() { try? await totals.load(from: catalog) }
        let values = await BlockingIO.run { [totals] in totals.values() }
        var families: [MetricFamily] = [.gauge("cassette_up", help: "1 while the service runs and answers.", up ? 1 : 0)]
        if let verdict = health.latest {
            families.append(.gauge("cassette_health_ok", help: "1 when the last health check found nothing wrong.", verdict.ok ? 1 : 0))
            families.append(.gauge("cassette_health_problems", help: "Problems the last health check found.", Double(verdict.problems.count)))
        }
        families += totals.families(values)
        if let gauges { families += await gauges() }
        return OpenMetricsText.render(families)
    }

    /// Writes the totals that grew (see `MetricTotals.persist`).
    func persist(force: Bool = false) async throws {
        guard totals.isLoaded else { return }
        let catalog = try await catalog()
        let values = await BlockingIO.run { [totals] in totals.values() }
        try await totals.persist(values, to: catalog, force: force)
    }
}

/// For the life of the daemon: loads the totals once the catalog is open, writes them back
/// every `MetricTotals.persistInterval` when they grew, rewrites the metrics file every
/// `metricsIntervalSeconds` when one is set, and at stop writes both a last time (the file
/// with `cassette_up 0`, so a scrape of a stopped box does not show it up).
struct MetricsService: Service {
    let publisher: MetricsPublisher
    let settings: MetricsSettings
    let ready: ReadyGate
    let logger: Logger

    func run() async throws {
        await cancelWhenGracefulShutdown { await ready.wait() }
        guard ready.isOpen, !Task.isShuttingDownGracefully, !Task.isCancelled else { return }
        let tick = Duration.seconds(settings.file == nil ? 60 : min(60, settings.intervalSeconds))
        let fileEvery = Duration.seconds(settings.intervalSeconds)
        var lastFile: ContinuousClock.Instant?
        var lastPersist = ContinuousClock.now
        var fileFailing = false
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            let now = ContinuousClock.now
            if let file = settings.file, lastFile.map({ now - $0 >= fileEvery }) ?? true {
                lastFile = now
                do {
                    try await write(file, up: true)
                    if fileFailing { logger.info("metrics file written again", metadata: ["file": "\(file)"]) }
                    fileFailing = false
                } catch {
                    if !fileFailing { logger.warning("cannot write the metrics file", metadata: ["file": "\(file)", "error": "\(error)"]) }
                    fileFailing = true
                }
            }
            if now - lastPersist >= MetricTotals.persistInterval {
                lastPersist = now
                do { try await publisher.persist() } catch { logger.info("metric totals not saved: \(error)") }
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: tick) }
        }
        do { try await publisher.persist(force: true) } catch { logger.info("metric totals not saved at stop: \(error)") }
        if let file = settings.file { try? await write(file, up: false) }
    }

    private func write(_ file: String, up: Bool) async throws {
        let text = await publisher.render(up: up)
        try await BlockingIO.run { try MetricsFile.write(text, to: file) }
    }
}
