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
        all["catalog"] = ready(catalog)
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

    /// The fields that never change, made at the first call: each call copies them.
    private let fixed = NIOLockedValueBox<[String: JSONValue]?>(nil)

    private func common(_ context: DaemonContext) -> [String: JSONValue] {
        var fields = fixed.withLockedValue { fixed in
            if let fixed { return fixed }
            // Room for every field of every service at once: no rehashing while it fills.
            var fields: [String: JSONValue] = Dictionary(minimumCapacity: 24)
            fields["service"] = .string(context.settings.name)
            fields["version"] = .string(CassetteVersion.string)
            fields["pid"] = .number(Double(getpid()))
            fields["socket"] = .string(context.settings.socketPath)
            fields["stateDir"] = .string(context.settings.stateDir)
            fixed = fields
            return fields
        }
        fields["uptimeSeconds"] = .number((ContinuousClock.now - context.startedAt).roundedSeconds)
        fields["eventSeq"] = .number(Double(context.hub.lastSeq))
        fields["subscribers"] = .number(Double(context.hub.subscriberCount))
        if let server {
            fields["connections"] = .number(Double(server.connectionCount))
        }
        return fields
    }

    private func catalogStatus(_ context: DaemonContext) async -> JSONValue {
        do {
            return ready(try await context.catalog())
        } catch {
            return ["state": "unavailable", "error": .string("\(error)")]
        }
    }

    /// The open catalog's member, made once per catalog (a daemon opens one).
    private let readyCatalog = NIOLockedValueBox<(catalog: Catalog, json: JSONValue)?>(nil)

    private func ready(_ catalog: Catalog) -> JSONValue {
        readyCatalog.withLockedValue { made in
            if let made, made.catalog === catalog { return made.json }
            let json: JSONValue = ["state": "ready", "path": .string(catalog.path),
                                   "schemaVersion": .number(Double(catalog.schemaVersionAtOpen))]
            made = (catalog, json)
            return json
        }
    }
}

extension Duration {
    /// Seconds, rounded to the millisecond: how status fields show a time.
    var roundedSeconds: Double { rounded(perSecond: 1) }

    /// Milliseconds, rounded to the microsecond.
    var roundedMilliseconds: Double { rounded(perSecond: 1000) }

    /// `components` once (it divides a 128-bit count), and no `pow`: status is answered often.
    private func rounded(perSecond units: Double) -> Double {
        let (seconds, attoseconds) = components
        return ((Double(seconds) + Double(attoseconds) / 1e18) * units * 1000).rounded() / 1000
    }
}
