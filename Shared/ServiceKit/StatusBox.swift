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

    func render(context: DaemonContext, health: HealthCheck,
                extra: @Sendable () async -> [String: JSONValue]) async -> JSONValue {
        let uptime = ContinuousClock.now - context.startedAt
        var fields: [String: JSONValue] = [
            "service": .string(context.settings.name),
            "version": .string(CassetteVersion.string),
            "uptimeSeconds": .number((Double(uptime.components.seconds) + Double(uptime.components.attoseconds) / 1e18).rounded(toPlaces: 3)),
            "pid": .number(Double(getpid())),
            "socket": .string(context.settings.socketPath),
            "stateDir": .string(context.settings.stateDir),
            "eventSeq": .number(Double(context.hub.lastSeq)),
            "subscribers": .number(Double(context.hub.subscriberCount)),
        ]
        if let server {
            fields["connections"] = .number(Double(server.connectionCount))
        }
        fields["catalog"] = await catalogStatus(context)
        fields["health"] = await health.recent(within: HealthCheck.statusMaxAge).json
        for (key, value) in await extra() { fields[key] = value }
        return .object(fields)
    }

    private func catalogStatus(_ context: DaemonContext) async -> JSONValue {
        do {
            let catalog = try await context.catalog()
            return ["state": "ready", "path": .string(catalog.path),
                    "schemaVersion": .number(Double(catalog.schemaVersionAtOpen))]
        } catch {
            return ["state": "unavailable", "error": .string("\(error)")]
        }
    }
}

extension Double {
    func rounded(toPlaces places: Int) -> Double {
        let scale = pow(10, Double(places))
        return (self * scale).rounded() / scale
    }
}
