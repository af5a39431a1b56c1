import Foundation
import NIOConcurrencyHelpers
import StateDB

/// One counter a service publishes as `<name>_total` and keeps across restarts.
public struct MetricTotal: Sendable {
    public var name: String
    public var help: String
    public var unit: String?
    /// What this process counted since it started (0 at start, never going down).
    public var sinceStart: @Sendable () -> Double
    /// Growth below this alone is not worth a catalog write (see `MetricTotals.persist`).
    public var persistStep: Double

    public init(
        _ name: String, help: String, unit: String? = nil, persistStep: Double = 0,
        sinceStart: @escaping @Sendable () -> Double
    ) {
        self.name = name
        self.help = help
        self.unit = unit
        self.persistStep = persistStep
        self.sinceStart = sinceStart
    }
}

/// A service's totals: what earlier runs counted (read from `metricTotals` once the catalog is
/// open) plus what this process counted. Written back in batches, never per event: by
/// `MetricsService` at most once a `persistInterval` when something grew, and at stop. A kill
/// loses at most what was counted since the last write.
final class MetricTotals: Sendable {
    static let persistInterval: Duration = .seconds(60)

    let service: String
    let totals: [MetricTotal]
    private struct State {
        var base: [String: Double] = [:]
        var loaded = false
        var persisted: [String: Double] = [:]
    }
    private let state = NIOLockedValueBox(State())

    init(service: String, totals: [MetricTotal]) {
        self.service = service
        self.totals = totals
    }

    var isLoaded: Bool { state.withLockedValue { $0.loaded } }

    /// Reads what earlier runs counted; once.
    func load(from catalog: StateDB) async throws {
        guard !isLoaded else { return }
        let stored = try await MetricTotalsStore(catalog: catalog, service: service).load()
        state.withLockedValue { s in
            guard !s.loaded else { return }
            s.base = stored
            s.persisted = stored
            s.loaded = true
        }
    }

    /// Each total's value now. Reads the sources: call it off the cooperative pool when one
    /// reads a file (`ProcessIO`).
    func values() -> [String: Double] {
        let base = state.withLockedValue { $0.base }
        var values: [String: Double] = [:]
        for total in totals { values[total.name] = (base[total.name] ?? 0) + total.sinceStart() }
        return values
    }

    func families(_ values: [String: Double]) -> [MetricFamily] {
        totals.map { .counter($0.name, help: $0.help, unit: $0.unit, values[$0.name] ?? 0) }
    }

    /// Writes the values that grew by at least their `persistStep` (`force`: any growth) since
    /// the last write; nothing when none did. Only once loaded: before, the values lack what
    /// earlier runs counted, and writing them would lose it.
    func persist(_ values: [String: Double], to catalog: StateDB, force: Bool = false) async throws {
        let due: [String: Double] = state.withLockedValue { s in
            guard s.loaded else { return [:] }
            var due: [String: Double] = [:]
            for total in totals {
                guard let value = values[total.name] else { continue }
                let grown = value - (s.persisted[total.name] ?? 0)
                if grown > 0 && (force || grown >= total.persistStep) { due[total.name] = value }
            }
            return due
        }
        guard !due.isEmpty else { return }
        try await MetricTotalsStore(catalog: catalog, service: service).save(due)
        state.withLockedValue { s in
            for (name, value) in due { s.persisted[name] = max(s.persisted[name] ?? 0, value) }
        }
    }
}
