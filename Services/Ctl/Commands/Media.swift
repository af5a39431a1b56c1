import ArgumentParser
import Wire

/// `cassettectl media start|stop|status|locate`: the player's local media server.
struct Media: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "media",
        abstract: "The player's local media server, which serves offlined products to any player on 127.0.0.1.",
        subcommands: [Start.self, Stop.self, Status.self, Locate.self])

    struct Start: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "start", abstract: "Start the media server and print its URL (media.server.start).")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let result = try await CtlClient.call(connection, .player, "media.server.start", json: output.json)
            CtlOutput.show(result, json: output.json) { Format.text($0["url"]) }
        }
    }

    struct Stop: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "stop", abstract: "Stop the media server (media.server.stop).")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let result = try await CtlClient.call(connection, .player, "media.server.stop", json: output.json)
            CtlOutput.show(result, json: output.json) { _ in "stopped" }
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "status", abstract: "Whether the media server runs, and its URL (media.server.status).")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let result = try await CtlClient.call(connection, .player, "media.server.status", json: output.json)
            CtlOutput.show(result, json: output.json) { $0["running"]?.boolValue == true ? "running at \(Format.text($0["url"]))" : "stopped" }
        }
    }

    struct Locate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "locate", abstract: "Where a player reads a product: its local URL when on the device, the origin's otherwise (media.locate).")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions
        @Argument(help: "Product id, e.g. vid-1.") var productId: String

        func run() async throws {
            let result = try await CtlClient.call(connection, .player, "media.locate", ["productId": .string(productId)], json: output.json)
            CtlOutput.show(result, json: output.json, render: KeyValues.render)
        }
    }
}
