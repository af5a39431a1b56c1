import ArgumentParser
import Foundation
import Wire

/// `cassettectl health [service…]`: the health gate. Exit 0 when every service asked is fit to
/// keep; else one line per problem and exit 3. What an OTA update's mark-good step, a watchdog
/// script or a systemd timer calls (docs/operations.md, "Health gate").
struct Health: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check that the services are fit to keep (exit 0), else print each problem (exit 3).",
        discussion: """
            Each service's most recent health verdict (service.status's health, checked in the \
            background every few seconds) is read; a service that does not answer, a verdict older \
            than --max-age seconds, and every problem a service reports are problems, printed one \
            per line as '<service>: <problem>'. With --wait, asks again every second until there \
            is none or the time is up (for a boot that just started the services).
            """)

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions

    @Option(help: "Seconds after which a verdict counts as stale (the service may be stalled).")
    var maxAge: Double = 30

    @Option(help: "Keep asking until healthy, for up to this many seconds (0: ask once).")
    var wait: Double = 0

    @Argument(help: "Services to check (default: all three).")
    var services: [ServiceName] = []

    func validate() throws {
        guard maxAge.isFinite, maxAge > 0 else { throw ValidationError("--max-age must be a number of seconds above 0.") }
        guard wait.isFinite, wait >= 0 else { throw ValidationError("--wait must be a number of seconds, 0 or more.") }
    }

    func run() async throws {
        let wanted = services.isEmpty ? ServiceName.allCases : services
        let deadline = Date().addingTimeInterval(wait)
        var (problems, verdicts) = await check(wanted)
        while !problems.isEmpty, Date() < deadline {
            try await Task.sleep(for: .seconds(1))
            (problems, verdicts) = await check(wanted)
        }
        if output.json {
            print(
                CtlOutput.pretty([
                    "ok": .bool(problems.isEmpty), "problems": .array(problems.map { .string($0) }),
                    "services": .object(verdicts),
                ]))
        } else if problems.isEmpty {
            print("ok: \(wanted.map(\.rawValue).joined(separator: ", ")) fit to keep")
        } else {
            for problem in problems { print(problem) }
        }
        if !problems.isEmpty { throw ExitCode(ExitStatus.unhealthy) }
    }

    /// Every problem of the services asked, and each one's `health` (or its connection error).
    private func check(_ wanted: [ServiceName]) async -> ([String], [String: JSONValue]) {
        var problems: [String] = []
        var verdicts: [String: JSONValue] = [:]
        for service in wanted {
            do {
                let link = try await Connection.connect(connection, service, json: output.json)
                defer { Task { await link.close() } }
                let status = try await link.attempt("service.status")
                let health = status["health"] ?? .null
                verdicts[service.rawValue] = health
                problems += Self.problems(of: service, health: health, maxAge: maxAge)
            } catch let failure as CtlFailure {
                verdicts[service.rawValue] = failure.json
                problems.append("\(service.rawValue): not answering: \(failure.text)")
            } catch {
                problems.append("\(service.rawValue): not answering: \(error)")
            }
        }
        return (problems, verdicts)
    }

    /// The lines for one service's `health` member.
    static func problems(of service: ServiceName, health: JSONValue, maxAge: Double) -> [String] {
        guard let ok = health["ok"]?.boolValue else {
            return ["\(service.rawValue): gives no health verdict (a service older than cassettectl?)"]
        }
        var lines = (health["problems"]?.arrayValue ?? []).map { "\(service.rawValue): \($0.stringValue ?? "\($0)")" }
        if !ok && lines.isEmpty { lines.append("\(service.rawValue): not healthy") }
        if let age = health["ageSeconds"]?.doubleValue, age > maxAge {
            lines.append("\(service.rawValue): the last health check is \(Int(age)) s old; the service may be stalled")
        }
        return lines
    }
}
