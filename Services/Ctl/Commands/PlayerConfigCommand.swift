import ArgumentParser
import Wire

/// `cassettectl config get|set`: the player's persisted settings (player.config.*). The config
/// *file* is read by the services at start; this is what the app may change while they run.
struct PlayerConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Show or change the player's settings (player.config.get, player.config.set).",
        subcommands: [Get.self, Set.self])

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show the player's settings.")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let result = try await CtlClient.call(connection, .player, "player.config.get", json: output.json)
            CtlOutput.show(result, json: output.json, render: KeyValues.render)
        }
    }

    enum Loudness: String, CaseIterable, ExpressibleByArgument { case OFF, TRACK, ALBUM }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change the player's settings; only the keys given change, and they persist.",
            discussion: "Booleans: yes/no, true/false, on/off. Example: cassettectl config set --loudness TRACK --offline-mode yes")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions
        @Option(help: "Loudness normalization: OFF, TRACK or ALBUM.") var loudness: Loudness?
        @Option(help: "Pre-amplification in dB (-20…20).") var preAmp: Double?
        @Option(help: "Streaming quality on Wi-Fi: LOW, HIGH, LOSSLESS, HI_RES, HI_RES_LOSSLESS.") var qualityWifi: String?
        @Option(help: "Streaming quality on cellular.") var qualityCellular: String?
        @Option(help: ArgumentHelp("Play only what is on the device: yes or no.", valueName: "yes|no")) var offlineMode: BooleanArgument?

        func run() async throws {
            var params: [String: JSONValue] = [:]
            if let loudness { params["loudnessNormalizationMode"] = .string(loudness.rawValue) }
            if let preAmp { params["loudnessNormalizationPreAmp"] = .number(preAmp) }
            if let qualityWifi { params["streamingQualityWifi"] = .string(qualityWifi) }
            if let qualityCellular { params["streamingQualityCellular"] = .string(qualityCellular) }
            if let offlineMode { params["offlineMode"] = .bool(offlineMode.value) }
            guard !params.isEmpty else { throw ValidationError("Give at least one setting to change, e.g. --loudness TRACK.") }
            let result = try await CtlClient.call(connection, .player, "player.config.set", .object(params), json: output.json)
            CtlOutput.show(result, json: output.json, render: KeyValues.render)
        }
    }
}
