import ArgumentParser
import Foundation
import Glibc
import Wire

/// `cassettectl watch [service] [topic…]`: live events, one line each, from one service or all
/// three, until --count events, ^C, or every service watched went away.
struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print events as they happen, one per line (all three services unless one is named).",
        discussion: """
            Examples: `cassettectl watch` (everything), `cassettectl watch downloader downloads`, \
            `cassettectl watch player --json --count 10`. With --json each line is the event's \
            params object ({"topic","type","seq","data"}) plus "service". A service that goes away \
            (stopped, restarted) gets a line `<service>: gone (connection closed)` — with --json \
            {"service","topic":"service","type":"Gone","data":{"reason"}} — and the others are \
            still watched. Exit status 0 after --count events; 69 once every service watched is \
            gone (or none could be reached).
            """)

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions

    @Argument(
        help: ArgumentHelp(
            "A service (downloader, player or reporter; default all three), then topics (downloads, player, reporter, network, catalog, service; default all).",
            valueName: "service|topic"))
    var selection: [String] = []

    @Option(help: "Stop after this many events.")
    var count: Int?

    func validate() throws {
        if let count, count < 1 { throw ValidationError("--count must be 1 or more.") }
    }

    enum Item: Sendable {
        case event(ServiceName, RPCEvent)
        case gone(ServiceName)
    }

    func run() async throws {
        var services = ServiceName.allCases
        var topics = selection
        if let first = selection.first, let named = ServiceName(rawValue: first) {
            services = [named]
            topics = Array(selection.dropFirst())
        }
        var connections: [Connection] = []
        for service in services {
            do {
                connections.append(try await Connection.connect(connection, service, json: output.json))
            } catch let failure as CtlFailure {
                // Watching one: its failure is the command's. Watching all three: one that is down is left out.
                if services.count == 1 { throw failure.report(json: output.json) }
                CtlOutput.error("\(failure.text); watching the others.")
            }
        }
        guard !connections.isEmpty else {
            CtlOutput.error("no service is reachable in \(connection.socketPath(for: .player).dropLast("/player.sock".count)).")
            throw ExitCode(ExitStatus.unavailable)
        }
        for c in connections { try await c.subscribe(topics) }

        let (merged, sink) = AsyncStream.makeStream(of: Item.self)
        let forwarders = connections.map { c in
            Task {
                for await step in c.steps { if case .event(let event) = step { sink.yield(.event(c.service, event)) } }
                sink.yield(.gone(c.service))
            }
        }
        let closer = Task {
            for f in forwarders { await f.value }
            sink.finish()
        }
        var seen = 0, live = connections.count
        var overflowed = Set<String>()
        watching: for await item in merged {
            switch item {
            case .event(let service, let event):
                print(output.json ? Self.json(service, event) : Self.line(service, event))
                if event.type == "Overflow" { overflowed.insert(service.rawValue) }
                seen += 1
            case .gone(let service):
                let reason = overflowed.contains(service.rawValue) ? "events not read in time (Overflow)" : "connection closed"
                print(output.json ? Self.goneJSON(service, reason) : Self.goneLine(service, reason))
                live -= 1
            }
            fflush(nil) // every stdio stream: `stdout` itself is a global Swift 6 will not touch
            if let count, seen >= count { break watching }
            if live == 0 { break watching }
        }
        closer.cancel()
        for c in connections { await c.close() }
        if live == 0 && (count.map { seen < $0 } ?? true) {
            CtlOutput.error(connections.count == 1 ? "the \(connections[0].service.rawValue) went away." : "every service watched went away.")
            throw ExitCode(ExitStatus.unavailable)
        }
    }

    static func json(_ service: ServiceName, _ event: RPCEvent) -> String {
        var params = event.json["params"]?.objectValue ?? [:]
        params["service"] = .string(service.rawValue)
        return CtlOutput.compact(.object(params))
    }

    static func line(_ service: ServiceName, _ event: RPCEvent) -> String {
        let fields = (event.data.objectValue ?? [:]).sorted { $0.key < $1.key }
            .map { "\($0.key)=\(Format.text($0.value))" }.joined(separator: " ")
        return "\(clock())  \(service.rawValue)  \(event.topic)  \(event.type)  \(fields)"
    }

    static func goneLine(_ service: ServiceName, _ reason: String) -> String {
        "\(clock())  \(service.rawValue): gone (\(reason))"
    }

    static func goneJSON(_ service: ServiceName, _ reason: String) -> String {
        CtlOutput.compact([
            "service": .string(service.rawValue), "topic": "service", "type": "Gone",
            "data": ["reason": .string(reason)],
        ])
    }

    /// Local wall-clock time with milliseconds, like a log line.
    static func clock() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var parts = tm()
        var seconds = now.tv_sec
        localtime_r(&seconds, &parts)
        return String(format: "%02d:%02d:%02d.%03d", parts.tm_hour, parts.tm_min, parts.tm_sec, Int(now.tv_nsec / 1_000_000))
    }
}
