import ArgumentParser

/// `cassettectl`: drive the Cassette services from a shell or script.
@main
struct CassetteCtl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cassettectl",
        abstract: "Control the Cassette services over their sockets.",
        subcommands: [Call.self, Status.self, Watch.self])
}

/// Options every subcommand shares.
struct ConnectionOptions: ParsableArguments {
    @Option(name: .long, help: "Directory holding the service sockets (env CASSETTE_RUNTIME_DIR, default /run/cassette).")
    var runtimeDir: String?

    @Option(name: .long, help: "Seconds to wait for an answer.")
    var timeout: Double = 30

    func socketPath(for service: ServiceName) -> String {
        let dir = runtimeDir ?? ProcessInfo.processInfo.environment["CASSETTE_RUNTIME_DIR"] ?? "/run/cassette"
        return "\(dir)/\(service.rawValue).sock"
    }
}

enum ServiceName: String, CaseIterable, ExpressibleByArgument {
    case downloader, player, reporter
}

import Foundation
