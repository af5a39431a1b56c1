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
        var oldest = Format.date(r["oldestPendingAt"])
        if let age = r["oldestPendingAgeSeconds"]?.doubleValue { oldest += " (\(HumanTime.duration(age)) ago)" }
        table.add(["oldest pending", oldest])
        if let last = r["lastAttempt"], last != .null {
            var text =
                "\(Format.date(last["startedAt"]))  \(Format.text(last["result"])): \(Format.text(last["accepted"])) of \(Format.text(last["records"])) accepted"
            if let error = last["error"]?["name"]?.stringValue { text += " (\(error))" }
            table.add(["last attempt", text])
        } else {
            table.add(["last attempt", "-"])
        }
        if let delivery = r["delivery"], delivery != .null {
            var text = Format.text(delivery["state"])
            if let retry = delivery["nextAttemptInSeconds"]?.doubleValue { text += ", next attempt in \(HumanTime.duration(retry))" }
            table.add(["delivery", text])
        }
        if r["queueFull"]?.boolValue == true { table.add(["queue", "FULL: new records are refused"]) }
        if r["inProgress"]?.boolValue == true {
            table.add(["flush", "the origin has not answered yet; delivery goes on in the background (`cassettectl watch reporter`)"])
        }
        return table.render()
    }

    /// The failure of a flush whose delivery attempt failed; nil when it delivered, there was
    /// nothing to send, or the attempt was still going on when the reporter answered.
    static func flushFailure(_ r: JSONValue) -> CtlFailure? {
        guard r["attempted"]?.boolValue == true, r["inProgress"]?.boolValue != true,
            r["lastAttempt"]?["result"]?.stringValue == "failed"
        else { return nil }
        let error = r["lastAttempt"]?["error"]
        let name = error?["name"]?.stringValue ?? "DeliveryFailed"
        var message = "delivery failed"
        if let text = error?["message"]?.stringValue { message += ": \(name): \(text)" }
        message += "; \(Format.text(r["pending"])) record(s) still pending, the reporter retries by itself"
        return CtlFailure(
            name: name, message: message, exit: ExitStatus.workFailed, service: .reporter, method: "playlog.flush",
            hint: "`cassettectl playlog status` shows the last attempt; `cassettectl watch reporter` shows the next ones.",
            text: "reporter: \(message)")
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
        static let configuration = CommandConfiguration(
            abstract: "Deliver pending records to the origin now.",
            discussion: "Exit status 2 when the delivery attempt failed (the records stay pending); 1 when the reporter has no origin.")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let result = try await CtlClient.call(connection, .reporter, "playlog.flush", json: output.json)
            if let failure = Playlog.flushFailure(result) {
                // With --json: the error, and the reporter's answer beside it.
                if output.json {
                    var both = failure.json.objectValue ?? [:]
                    both["result"] = result
                    print(CtlOutput.pretty(.object(both)))
                } else {
                    print(Playlog.render(result))
                }
                throw failure.report(json: false)
            }
            CtlOutput.show(result, json: output.json, render: Playlog.render)
        }
    }
}
