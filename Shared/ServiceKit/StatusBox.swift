import Catalog
import Foundation
import NIOConcurrencyHelpers
import Wire

/// Renders `service.status`. Holds the server weakly-late because the server is built from
/// a router that already contains this method.
final class StatusBox: Sendable {
    private let serverBox = NIOLockedValueBox<RPCServer?>(nil)

    var server: RPCServer? {
        get { serverBox.withLockedValue { $0 } }
        set { serverBox.withLockedValue { $0 = newValue } }
    }

    /// The answer without awaiting anything, when that is possible: the catalog is open, the
    /// last health check is recent and the service's fields are read on the spot. Else nil.
    func renderNow(context: DaemonContext, health: HealthCheck, opened: OpenedCatalog,
                   extra: StatusFields) -> JSONValue? {
        guard case .now(let fields) = extra, let catalog = opened.value,
              let report = health.recentReport(within: HealthCheck.statusMaxAge) else { return nil }
        var all = common(context)
        all["catalog"] = Self.ready(catalog)
        all["health"] = report.json
        for (key, value) in fields() { all[key] = value }
        return .object(all)
    }

    func render(context: DaemonContext, health: HealthCheck, extra: StatusFields) async -> JSONValue {
        var fields = common(context)
        fields["catalog"] = await catalogStatus(context)
        fields["health"] = await health.recent(within: HealthCheck.statusMaxAge).json
        let own: [String: JSONValue]
        switch extra {
        case .now(let read): own = read()
        case .awaited(let gather): own = await gather()
        }
        for (key, value) in own { fields[key] = value }
        return .object(fields)
    }

    /// Read once: a system call per `service.status` showed in its profile.
    private static let pid = JSONValue.number(Double(getpid()))

    private func common(_ context: DaemonContext) -> [String: JSONValue] {
        let uptime = ContinuousClock.now - context.startedAt
        // Room for every field of every service at once: no rehashing while it fills.
        var fields: [String: JSONValue] = Dictionary(minimumCapacity: 24)
        fields["service"] = .string(context.settings.name)
        fields["version"] = .string(CassetteVersion.string)
        fields["uptimeSeconds"] = .number((Double(uptime.components.seconds) + Double(uptime.components.attoseconds) / 1e18).rounded(toPlaces: 3))
        fields["pid"] = Self.pid
        fields["socket"] = .string(context.settings.socketPath)
        fields["stateDir"] = .string(context.settings.stateDir)
        fields["eventSeq"] = .number(Double(context.hub.lastSeq))
        fields["subscribers"] = .number(Double(context.hub.subscriberCount))
        if let server {
            fields["connections"] = .number(Double(server.connectionCount))
        }
        return fields
    }

    private func catalogStatus(_ context: DaemonContext) async -> JSONValue {
        do {
            return Self.ready(try await context.catalog())
        } catch {
            return ["state": "unavailable", "error": .string("\(error)")]
        }
    }

    private static func ready(_ catalog: Catalog) -> JSONValue {
        ["state": "ready", "path": .string(catalog.path), "schemaVersion": .number(Double(catalog.schemaVersionAtOpen))]
    }
}

extension Double {
    func rounded(toPlaces places: Int) -> Double {
        let scale = pow(10, Double(places))
        return (self * scale).rounded() / scale
    }
}
