import ArgumentParser
import Wire

/// `cassettectl watch <service> [topic…]`: live events, one JSON line each.
struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print a service's events as they happen (one JSON object per line).")

    @OptionGroup var connection: ConnectionOptions

    @Argument(help: "downloader, player or reporter.")
    var service: ServiceName

    @Argument(help: "Topics (downloads, player, reporter, network, catalog, service); default all.")
    var topics: [String] = []

    @Option(help: "Stop after this many events.")
    var count: Int?

    func run() async throws {
        let client = try await CtlClient.connect(connection, service)
        do {
            _ = try await client.call("events.subscribe", ["topics": .array(topics.map { .string($0) })])
        } catch let error as RPCError {
            CtlOutput.error("\(error.name): \(error.message)")
            throw ExitCode(1)
        }
        var seen = 0
        for await event in client.events {
            print(CtlOutput.compact(event.json["params"] ?? .null))
            FileHandle.standardOutput.synchronizeFile()
            seen += 1
            if let count, seen >= count { break }
        }
        await client.close()
    }
}

import Foundation
