import ArgumentParser
import Foundation

/// `cassettectl`: drive the Cassette services from a shell or script.
@main
struct CassetteCtl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cassettectl",
        abstract: "Control the Cassette services over their sockets.",
        discussion: """
            Tables for people by default; --json prints JSON for scripts. Sockets are found in \
            --runtime-dir, else $CASSETTE_RUNTIME_DIR, else /run/cassette.

            Exit status: 0 success; 1 the service answered with an error (shown on stderr as \
            '<service>: <ErrorName>: <message>'); 2 the work waited for ended in failure (sync with \
            failed items, offline add --wait that failed); 64 bad usage; 69 a service cannot be \
            reached, closed the connection or did not answer in time; 75 --wait-timeout passed \
            while the work goes on.
            """,
        version: "0.1.0",
        subcommands: [
            Status.self, Call.self, Watch.self,
            Stations.self, Sync.self, Offline.self, Policy.self, Network.self, SyncNow.self,
            Tune.self, Skip.self, Load.self, Queue.self, Play.self, Pause.self, Seek.self, Next.self, Stop.self, Now.self,
            PlayerConfigCommand.self, Playlog.self,
        ])
}

/// Options every subcommand shares.
struct ConnectionOptions: ParsableArguments {
    @Option(name: .long, help: "Directory holding the service sockets (env CASSETTE_RUNTIME_DIR, default /run/cassette).",
            completion: .directory)
    var runtimeDir: String?

    @Option(name: .long, help: "Seconds to wait for an answer.")
    var timeout: Double = 30

    func socketPath(for service: ServiceName) -> String {
        let dir = runtimeDir ?? ProcessInfo.processInfo.environment["CASSETTE_RUNTIME_DIR"] ?? "/run/cassette"
        return "\(dir)/\(service.rawValue).sock"
    }

    func validate() throws {
        guard timeout.isFinite, timeout > 0 else { throw ValidationError("--timeout must be a number of seconds above 0.") }
    }
}

/// `--json`, for every command that prints a result.
struct OutputOptions: ParsableArguments {
    @Flag(help: "Print JSON for scripts instead of a table.")
    var json = false
}

enum ServiceName: String, CaseIterable, ExpressibleByArgument, Sendable {
    case downloader, player, reporter
}
