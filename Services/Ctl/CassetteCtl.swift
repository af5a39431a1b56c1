import ArgumentParser
import Foundation
import Wire

/// `cassettectl`: drive the Cassette services from a shell or script.
@main
struct CassetteCtl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cassettectl",
        abstract: "Control the Cassette services over their sockets.",
        discussion: """
            Tables for people by default; --json prints JSON for scripts (a failure as \
            {"error":{"code","name","message"}}). Sockets are found in --runtime-dir, else \
            $CASSETTE_RUNTIME_DIR, else /run/cassette. --runtime-dir, --timeout and --json may come \
            before the command too: cassettectl --json --timeout 5 status.

            Exit status: 0 success; 1 the service answered with an error (shown on stderr as \
            '<service>: <ErrorName>: <message>'); 2 the work waited for ended in failure (sync with \
            failed items, offline add --wait that failed, a product that does not play, playlog \
            flush that did not deliver); 3 health found a problem; 64 bad usage; 69 a service cannot be reached, closed the \
            connection or did not answer in time; 75 the wait timed out while the work goes on.
            """,
        version: CassetteVersion.string,
        subcommands: [
            Status.self, Health.self, Metrics.self, Call.self, Watch.self,
            Stations.self, Sync.self, Offline.self, Policy.self, Network.self, SyncNow.self,
            Tune.self, Skip.self, Load.self, Queue.self, Play.self, Pause.self, Seek.self, Next.self, Stop.self, Now.self,
            PlayerConfigCommand.self, Playlog.self, Media.self, CatalogCommand.self,
        ])

    static func main() async {
        await main(GlobalArguments.hoist(Array(CommandLine.arguments.dropFirst())))
    }
}

/// Options every subcommand shares (also accepted before the subcommand: `GlobalArguments`).
struct ConnectionOptions: ParsableArguments {
    @Option(
        name: .long, help: "Directory holding the service sockets (env CASSETTE_RUNTIME_DIR, default /run/cassette).",
        completion: .directory)
    var runtimeDir: String?

    @Option(name: .long, help: "Seconds to wait for an answer (and, for load, play and tune, for the product to play).")
    var timeout: Double = 30

    func socketPath(for service: ServiceName) -> String {
        let dir = runtimeDir ?? ProcessInfo.processInfo.environment["CASSETTE_RUNTIME_DIR"] ?? "/run/cassette"
        return "\(dir)/\(service.rawValue).sock"
    }

    func validate() throws {
        guard timeout.isFinite, timeout > 0 else { throw ValidationError("--timeout must be a number of seconds above 0.") }
    }
}

/// `--json`, on every command.
struct OutputOptions: ParsableArguments {
    @Flag(help: "Print JSON for scripts instead of a table; a failure as {\"error\":{\"code\",\"name\",\"message\"}}.")
    var json = false
}

enum ServiceName: String, CaseIterable, ExpressibleByArgument, Sendable {
    case downloader, player, reporter
}
