import ArgumentParser
import Wire

/// `cassettectl now`: `player.status` (`cassettectl status` is the services' own status).
struct Now: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "What the player is doing: state, title, product, position, station (player.status).")
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @Flag(help: "One line instead of a table (for repeated polling).") var short = false

    func run() async throws {
        let result = try await CtlClient.call(connection, .player, "player.status", json: output.json)
        CtlOutput.show(result, json: output.json) { short ? Self.line($0) : Self.render($0) }
    }

    /// A metadata field of what plays, wherever the status carries it: on the status itself,
    /// in `playbackContext` or in `mediaProduct` (absent from players that do not send it).
    static func field(_ s: JSONValue, _ key: String) -> String? {
        for value in [s[key], s["playbackContext"]?[key], s["mediaProduct"]?[key]] {
            if let text = value?.stringValue, !text.isEmpty { return text }
        }
        return nil
    }

    /// `Title — Artist`, or the product id when the status has no title.
    static func title(_ s: JSONValue) -> String {
        guard let title = field(s, "title") else { return product(s) }
        return [title, field(s, "artist")].compactMap { $0 }.joined(separator: " — ")
    }

    static func product(_ s: JSONValue) -> String {
        guard let id = s["playbackContext"]?["productId"]?.stringValue ?? s["mediaProduct"]?["productId"]?.stringValue else { return "-" }
        if let requested = s["playbackContext"]?["requestedProductId"]?.stringValue, requested != id {
            return "\(id) (replacing \(requested))"
        }
        return id
    }

    static func position(_ s: JSONValue) -> String {
        "\(Format.duration(s["assetPosition"]?.doubleValue)) / \(Format.duration(s["playbackContext"]?["duration"]?.doubleValue))"
    }

    static func station(_ s: JSONValue) -> String {
        guard let station = s["activeStation"], station != .null else { return "-" }
        let index = (station["index"]?.intValue).map { "\($0 + 1)" } ?? "?"
        return "\(Format.text(station["name"])) (\(Format.text(station["id"])), item \(index) of \(Format.text(station["itemCount"])))"
    }

    /// `Title — Artist (product)`, or the product alone when the status has no title.
    static func what(_ s: JSONValue) -> String {
        field(s, "title") == nil ? product(s) : "\(title(s)) (\(product(s)))"
    }

    static func line(_ s: JSONValue) -> String {
        "\(Format.text(s["playbackState"]))  \(what(s))  \(position(s))  station: \(station(s))"
    }

    static func render(_ s: JSONValue) -> String {
        let context = s["playbackContext"]
        let source = context?["offline"]?.boolValue.map { $0 ? "device copy" : "streamed" } ?? "-"
        let audio = [context?["audioQuality"], context?["audioCodec"]].compactMap { $0?.stringValue }.joined(separator: " ")
        var table = Table(headers: ["PLAYER", ""])
        table.add(["state", Format.text(s["playbackState"])])
        for key in ["title", "artist", "album"] {
            if let value = field(s, key) { table.add([key, value]) }
        }
        table.add(["product", product(s)])
        table.add(["position", position(s)])
        table.add(["audio", audio.isEmpty ? "-" : audio + (context?["audioSampleRate"]?.intValue.map { " \($0) Hz" } ?? "")])
        table.add(["source", source])
        table.add(["station", station(s)])
        table.add(["next", Format.text(s["nextMediaProduct"]?["productId"])])
        table.add(["mode", s["offlineMode"]?.boolValue == true ? "offline" : "online"])
        if let output = s["output"], output != .null {
            let device = Format.text(output["device"])
            let state = output["error"]?["message"]?.stringValue.map { "UNAVAILABLE: \($0) (retrying)" } ?? Format.text(output["state"])
            table.add(["output", "\(device) \(state), \(Format.text(output["underruns"])) underruns"])
        }
        return table.render()
    }
}
