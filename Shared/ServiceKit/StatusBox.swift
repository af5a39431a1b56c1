import Foundation
import NIOConcurrencyHelpers
import StateDB
import Wire

/// Renders `service.status`. Holds the server weakly-late because the server is built from
/// a router that already contains this method.
final class StatusBox: Sendable {
    private let context: DaemonContext
    private let serverBox = NIOLockedValueBox<RPCServer?>(nil)
    /// The fields that never change, made once: each call copies them.
    private let fixed: [String: JSONValue]

    init(context: DaemonContext) {
        self.context = context
        // Room for every field of every service at once: no rehashing while it fills.
        var fixed: [String: JSONValue] = Dictionary(minimumCapacity: 24)
        fixed["service"] = .string(context.settings.name)
        fixed["version"] = .string(CassetteVersion.string)
        fixed["pid"] = .number(Double(getpid()))
        fixed["socket"] = .string(context.settings.socketPath)
        fixed["stateDir"] = .string(context.settings.stateDir)
        self.fixed = fixed
    }

    var server: RPCServer? {
        get { serverBox.withLockedValue { $0 } }
        set { serverBox.withLockedValue { $0 = newValue } }
    }

    /// The answer without awaiting anything, when that is possible: the catalog is open, a
    /// health verdict exists (the background rounds keep it fresh; its age is shown) and the
    /// service's fields are read on the spot. Else nil.
    func renderNow(health: HealthMonitor, opened: OpenedCatalog, extra: StatusFields) -> JSONValue? {
        guard case .now(let fields) = extra, let catalog = opened.value,
            let verdict = health.latest
        else { return nil }
        var all = common()
        all["catalog"] = ready(catalog)
        all["health"] = verdict.json
        for (key, value) in fields() { all[key] = value }
        return .object(all)
    }

    func render(health: HealthMonitor, extra: StatusFields) async -> JSONValue {
        var fields = common()
        fields["catalog"] = await catalogStatus()
        fields["health"] = await health.latestOrCheck().json
        let own: [String: JSONValue]
        switch extra {
        case .now(let read): own = read()
        case .awaited(let gather): own = await gather()
        }
        for (key, value) in own { fields[key] = value }
        return .object(fields)
    }

    private func common() -> [String: JSONValue] {
        var fields = fixed
        fields["uptimeSeconds"] = .number((ContinuousClock.now - context.startedAt).roundedSeconds)
        fields["eventSeq"] = .number(Double(context.hub.lastSeq))
        fields["subscribers"] = .number(Double(context.hub.subscriberCount))
        if let server {
            fields["connections"] = .number(Double(server.connectionCount))
        }
        return fields
    }

    private func catalogStatus() async -> JSONValue {
        do {
            return ready(try await context.catalog())
        } catch {
            return ["state": "unavailable", "error": .string("\(error)")]
        }
    }

    /// The open catalog's member, made once per catalog (a daemon opens one).
    private let readyCatalog = NIOLockedValueBox<(catalog: StateDB, json: JSONValue)?>(nil)

    private func ready(_ catalog: StateDB) -> JSONValue {
        readyCatalog.withLockedValue { made in
            if let made, made.catalog === catalog { return made.json }
            var fields: [String: JSONValue] = [
                "state": "ready", "path": .string(catalog.path),
                "schemaVersion": .number(Double(catalog.schemaVersionAtOpen)),
            ]
            // Left behind by a newer release after a rollback: additive, so carried along.
            if !catalog.unknownMigrations.isEmpty {
                fields["unknownMigrations"] = .array(catalog.unknownMigrations.map { .string($0) })
            }
            let json = JSONValue.object(fields)
            made = (catalog, json)
            return json
        }
    }
}
