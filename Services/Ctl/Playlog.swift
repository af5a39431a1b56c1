import ArgumentParser
import Wire

/// `cassettectl playlog status|flush`: the reporter's outbox of play events.
struct Playlog: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The play log waiting for the origin (playlog.status, playlog.flush).",
        subcommands: [Status.self, Flush.self])

    static func render(_ r: JSONValue) -> String {
        var table = Table(headers: ["PLAY LOG", ""])
        table.add(["pending", "\(Format.text(r["pending"])) (\(Format.bytes(r["pendingBytes"]?.doubleValue)))"])
        table.add(["delivered", Format.text(r["delivered"])])
        table.add(["rejected", Format.text(r["rejected"])])
        table.add(["plays", "pending \(Format.text(r["plays"]?["pending"])), delivered \(Format.text(r["plays"]?["delivered"]))"])
        table.add(["consumption", "pending \(Format.text(r["consumption"]?["pending"])), delivered \(Format.text(r["consumption"]?["delivered"]))"])
        table.add(["oldest pending", Format.text(r["oldestPendingAt"])])
        if let last = r["lastAttempt"], last != .null {
            var text = "\(Format.text(last["startedAt"]))  \(Format.text(last["result"])): \(Format.text(last["accepted"])) of \(Format.text(last["records"])) accepted"
            if let error = last["error"]?["name"]?.stringValue { text += " (\(error))" }
            table.add(["last attempt", text])
        } else {
            table.add(["last attempt", "-"])
        }
        if r["queueFull"]?.boolValue == true { table.add(["queue", "FULL: new records are refused"]) }
        return table.render()
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Pending, delivered and rejected counts and the last delivery attempt.")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let result = try await CtlClient.call(connection, .reporter, "playlog.status", json: output.json)
            CtlOutput.show(result, json: output.json, render: Playlog.render)
        }
    }

    struct Flush: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Deliver pending records to the origin now.")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let result = try await CtlClient.call(connection, .reporter, "playlog.flush", json: output.json)
            CtlOutput.show(result, json: output.json, render: Playlog.render)
        }
    }
}
