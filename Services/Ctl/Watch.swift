import ArgumentParser
import Foundation
import Glibc
import Wire

/// `cassettectl watch [service] [topic…]`: live events, one line each, from one service or all
/// three, until the services close the connections, ^C, or --count events.
struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print events as they happen, one per line (all three services unless one is named).",
        discussion: """
            Examples: `cassettectl watch` (everything), `cassettectl watch downloader downloads`, \
            `cassettectl watch player --json --count 10`. With --json each line is the event's \
            params object ({"topic","type","seq","data"}) plus "service".
            """)

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: ArgumentHelp(
        "A service (downloader, player or reporter; default all three), then topics (downloads, player, reporter, network, catalog, service; default all).",
        valueName: "service|topic"))
    var selection: [String] = []

    @Option(help: "Stop after this many events.")
    var count: Int?

    func validate() throws {
        if let count, count < 1 { throw ValidationError("--count must be 1 or more.") }
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
            if services.count == 1 {
                connections.append(try await Connection.open(connection, service, json: output.json))
                continue
            }
            // Watching all three: one that is down is reported and left out.
            do {
                let client = try await RPCClient.connect(path: connection.socketPath(for: service))
                connections.append(Connection(service: service, client: client, timeout: connection.timeout, json: output.json))
            } catch {
                CtlOutput.error("\(service.rawValue) is not reachable at \(connection.socketPath(for: service)); watching the others.")
            }
        }
        guard !connections.isEmpty else {
            CtlOutput.error("no service is reachable in \(connection.socketPath(for: .player).dropLast("/player.sock".count)).")
            throw ExitCode(ExitStatus.unavailable)
        }
        for c in connections { try await c.subscribe(topics) }

        let (merged, sink) = AsyncStream.makeStream(of: (ServiceName, RPCEvent).self)
        let forwarders = connections.map { c in
            Task { for await event in c.client.events { sink.yield((c.service, event)) } }
        }
        let closer = Task {
            for f in forwarders { await f.value }
            sink.finish()
        }
        var seen = 0
        for await (service, event) in merged {
            print(output.json ? Self.json(service, event) : Self.line(service, event))
            fflush(nil)  // every stdio stream: `stdout` itself is a global Swift 6 will not touch
            seen += 1
            if let count, seen >= count { break }
        }
        closer.cancel()
        for c in connections { await c.close() }
    }

    static func json(_ service: ServiceName, _ event: RPCEvent) -> String {
        var params = event.json["params"]?.objectValue ?? [:]
        params["service"] = .string(service.rawValue)
        return CtlOutput.compact(.object(params))
    }

    static func line(_ service: ServiceName, _ event: RPCEvent) -> String {
        let clock = Self.clock()
        let fields = (event.data.objectValue ?? [:]).sorted { $0.key < $1.key }
            .map { "\($0.key)=\(Format.text($0.value))" }.joined(separator: " ")
        return "\(clock)  \(service.rawValue)  \(event.topic)  \(event.type)  \(fields)"
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
