import ArgumentParser
import Foundation
import Wire

/// `cassettectl status [service…]`: one line per service for people, JSON for scripts.
struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show each service's status.",
        discussion: """
            Exit status 69 when any service asked is down; --json then gives that service \
            {"error":{"code","name","message"}} (name: NoSocket, ConnectionRefused, PermissionDenied, …).
            """)

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: "Services to ask (default: all three).")
    var services: [ServiceName] = []

    func run() async throws {
        let wanted = services.isEmpty ? ServiceName.allCases : services
        var results: [String: JSONValue] = [:]
        var failures: [CtlFailure] = []
        for service in wanted {
            do {
                let link = try await Connection.connect(connection, service, json: output.json)
                defer { Task { await link.close() } }
                var status = try await link.attempt("service.status")
                // The time to silence, from a downloader that offers it (older ones do not).
                if service == .downloader, case .object(var fields) = status,
                    let forecast = try? await link.attempt("offline.forecast")
                {
                    fields["forecast"] = forecast
                    status = .object(fields)
                }
                results[service.rawValue] = status
            } catch let failure as CtlFailure {
                results[service.rawValue] = failure.json
                failures.append(failure)
            }
        }
        CtlOutput.show(.object(results), json: output.json) { _ in Self.render(wanted, results) }
        // The reason each service is down, and what to do (once per distinct message).
        var said = Set<String>()
        for failure in failures where said.insert(failure.name == "PermissionDenied" ? failure.name : failure.text).inserted {
            CtlOutput.error(failure.text)
        }
        if !failures.isEmpty { throw ExitCode(ExitStatus.unavailable) }
    }

    static func render(_ wanted: [ServiceName], _ results: [String: JSONValue]) -> String {
        var table = Table(headers: ["SERVICE", "STATE", "PID", "UPTIME", "VERSION", "CATALOG", "DETAIL"])
        for service in wanted {
            let r = results[service.rawValue] ?? .null
            if let error = r["error"] {
                table.add([service.rawValue, "down", "-", "-", "-", "-", down(error["name"]?.stringValue)])
                continue
            }
            table.add([
                service.rawValue, "up", Format.text(r["pid"]), HumanTime.duration(r["uptimeSeconds"]?.doubleValue),
                Format.text(r["version"]), "schema v\(r["catalog"]?["schemaVersion"]?.intValue.map(String.init) ?? "?")",
                detail(service, r),
            ])
        }
        return table.render()
    }

    private static func down(_ name: String?) -> String {
        switch name {
        case "PermissionDenied"?: return "permission denied"
        case "NoSocket"?: return "no socket"
        case "ConnectionRefused"?: return "not listening"
        case "Timeout"?: return "no answer"
        default: return name ?? "-"
        }
    }

    /// `offline.forecast` at a glance: how long the box can play offline, and until when.
    static func silence(_ forecast: JSONValue, now: Date = Date()) -> String {
        let playable = forecast["playableSeconds"]?.doubleValue ?? 0
        guard playable > 0 else { return "nothing to play offline" }
        let length = "\(HumanTime.duration(playable)) playable offline"
        guard let text = forecast["silentAt"]?.stringValue, let silentAt = HumanTime.parse(text) else { return length + ", never silent" }
        return length + ", silent in \(HumanTime.duration(max(0, silentAt.timeIntervalSince(now))))"
    }

    /// What each service adds that matters at a glance.
    private static func detail(_ service: ServiceName, _ r: JSONValue) -> String {
        var parts: [String] = []
        if r["catalog"]?["state"]?.stringValue == "unavailable" { parts.append("catalog unavailable: \(Format.text(r["catalog"]?["error"]))") }
        if r["health"]?["ok"]?.boolValue == false {
            let count = r["health"]?["problems"]?.arrayValue?.count ?? 0
            parts.append("unhealthy: \(count) problem\(count == 1 ? "" : "s") (cassettectl health)")
        }
        switch service {
        case .downloader:
            if let network = r["network"]?.stringValue { parts.append("network \(network)") }
            if let allowed = r["downloadsAllowed"]?.stringValue { parts.append("downloads \(allowed)") }
            if let window = r["downloadWindow"], window["open"]?.boolValue == false {
                parts.append("outside the download windows" + (window["opensAt"]?.stringValue.map { " until \(HumanTime.date($0))" } ?? ""))
            }
            if let active = r["activeDownloads"]?.intValue, active > 0 { parts.append("\(active) downloading") }
            if r["originAuth"]?.stringValue == "refused" { parts.append("origin refuses the credentials") }
            if let forecast = r["forecast"] { parts.append(silence(forecast)) }
        case .player:
            if let inMemory = r["playLog"]?["inMemory"]?.intValue, inMemory > 0 { parts.append("\(inMemory) plays in memory") }
            // A box without the bus is normal (status shows it); a refused or taken name is not.
            if let problem = r["mpris"]?["problem"]?["name"]?.stringValue, problem != "BusUnreachable" {
                parts.append("MPRIS not served: \(problem)")
            }
        case .reporter:
            break
        }
        if r["origin"] == .null { parts.append("no origin") }
        return parts.isEmpty ? "-" : parts.joined(separator: ", ")
    }
}
