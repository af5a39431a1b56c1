import Foundation
import TestSupport
import Wire
import XCTest

/// cassettectl against the real services and the reference origin: exit codes, JSON output,
/// a sync followed through the downloader's events (piped, so without a bar), clear errors.
final class CtlTests: XCTestCase {
    var stack: CassetteStack!

    override func setUpWithError() throws { stack = try CassetteStack() }
    override func tearDown() { stack?.stop() }

    func testSyncFollowsTheEventsAndPrintsNoBarWhenPiped() throws {
        let sync = try Command.ctl(stack, ["sync", "st-9", "--json"])
        XCTAssertEqual(sync.status, 0, sync.all + stack.logs)
        let result = try XCTUnwrap(sync.json, sync.all)
        XCTAssertEqual(result["stationId"], "st-9")
        XCTAssertEqual(result["complete"], true, sync.all)
        XCTAssertEqual(result["pending"]?.intValue, 0, sync.all)
        XCTAssertEqual(result["failed"]?.intValue, 0, sync.all)
        XCTAssertEqual(result["total"]?.intValue, 3, sync.all)
        // Piped: no progress bar, no control characters anywhere.
        XCTAssertFalse(sync.stderr.contains("\r") || sync.stderr.contains("\u{1B}") || sync.stdout.contains("\r"), sync.all)
        XCTAssertTrue(sync.stderr.isEmpty, sync.all)

        // What was waited for is really there: the station's items are verified on the device.
        let stations = try Command.ctl(stack, ["stations", "--json"])
        XCTAssertEqual(stations.status, 0, stations.all)
        let local = stations.json?["localOffline"]?.arrayValue?.first { $0["id"] == "st-9" }
        XCTAssertEqual(local?["verifiedCount"]?.intValue, 3, stations.all)

        // The table for people names the station and shows it held.
        let table = try Command.ctl(stack, ["stations"])
        XCTAssertEqual(table.status, 0, table.all)
        let row = table.stdout.split(separator: "\n").first { $0.hasPrefix("st-9 ") }
        XCTAssertNotNil(row, table.all)
        XCTAssertTrue(row?.contains("3/3") ?? false, table.all)

        // A second sync has nothing to download and answers at once, complete.
        let again = try Command.ctl(stack, ["sync", "st-9"])
        XCTAssertEqual(again.status, 0, again.all)
        XCTAssertTrue(again.stdout.contains("st-9: 3/3 items on the device"), again.all)
    }

    func testPlaybackCommandsAndJSON() throws {
        XCTAssertEqual(try Command.ctl(stack, ["sync", "st-9"]).status, 0)
        let tune = try Command.ctl(stack, ["tune", "st-9"])
        XCTAssertEqual(tune.status, 0, tune.all + stack.logs)
        var state: String?
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            let now = try Command.ctl(stack, ["now", "--json"])
            XCTAssertEqual(now.status, 0, now.all)
            state = now.json?["playbackState"]?.stringValue
            if state == "PLAYING" { break }
            usleep(100_000)
        }
        XCTAssertEqual(state, "PLAYING", stack.logs)
        let table = try Command.ctl(stack, ["now"])
        XCTAssertTrue(table.stdout.contains("st-9"), table.all)
        XCTAssertEqual(try Command.ctl(stack, ["pause"]).status, 0)
        XCTAssertEqual(try Command.ctl(stack, ["seek", "0:01"]).status, 0)
        XCTAssertEqual(try Command.ctl(stack, ["stop"]).status, 0)
        let idle = try Command.ctl(stack, ["now", "--json"])
        XCTAssertEqual(idle.json?["playbackState"], "IDLE", idle.all)

        for args in [
            ["status", "--json"], ["config", "get", "--json"], ["playlog", "status", "--json"],
            ["policy", "get", "--json"], ["offline", "list", "--json"],
        ] {
            let run = try Command.ctl(stack, args)
            XCTAssertEqual(run.status, 0, "\(args): \(run.all)")
            XCTAssertNotNil(run.json?.objectValue, "\(args) printed no JSON object: \(run.all)")
        }
        let status = try Command.ctl(stack, ["status", "--json"])
        for service in ["downloader", "player", "reporter"] {
            XCTAssertEqual(status.json?[service]?["service"]?.stringValue, service, status.all)
        }
        // Settings round-trip through the player.
        let set = try Command.ctl(stack, ["config", "set", "--loudness", "TRACK", "--json"])
        XCTAssertEqual(set.json?["loudnessNormalizationMode"], "TRACK", set.all)
    }

    func testErrorsAreClearAndExitCodesMeaningful() throws {
        // The service refuses: 1, with the error's stable name on stderr, and JSON on stdout with --json.
        let bad = try Command.ctl(stack, ["tune", "not a station!", "--json"])
        XCTAssertEqual(bad.status, 1, bad.all)
        XCTAssertTrue(bad.stderr.contains("player: InvalidParams:"), bad.all)
        XCTAssertEqual(bad.json?["error"]?["name"], "InvalidParams", bad.all)

        let unknown = try Command.ctl(stack, ["sync", "st-404"])
        XCTAssertEqual(unknown.status, 1, unknown.all)
        XCTAssertTrue(unknown.stderr.hasPrefix("cassettectl: downloader: "), unknown.all)
        XCTAssertEqual(unknown.stderr.split(separator: "\n").count, 1, "one clear line: \(unknown.all)")

        // A planned method the service does not offer yet: a clean MethodNotFound, or a result once it lands.
        for args in [["network", "get"], ["sync-now"], ["offline", "estimate", "tr-1"]] {
            let run = try Command.ctl(stack, args)
            if run.status == 0 { continue }
            XCTAssertEqual(run.status, 1, "\(args): \(run.all)")
            XCTAssertTrue(run.stderr.contains("MethodNotFound") && run.stderr.contains("does not offer"), "\(args): \(run.all)")
        }

        // Bad usage is refused before anything is sent: 64.
        for args in [
            ["seek", "soon"], ["sync", "st-9", "--wait-timeout", "0"], ["policy", "set"], ["queue"],
            ["no-such-command"], ["call", "player", "player.seek", "[1]"],
        ] {
            let run = try Command.ctl(stack, args)
            XCTAssertEqual(run.status, 64, "\(args): \(run.all)")
            XCTAssertFalse(run.stderr.isEmpty, "\(args) printed no reason")
        }

        // Nobody there: 69, and the message says where it looked.
        let gone = try Command.run(Binaries.path("cassettectl"), ["now", "--runtime-dir", stack.dir.path + "/nowhere"])
        XCTAssertEqual(gone.status, 69, gone.all)
        XCTAssertTrue(gone.stderr.contains("/nowhere/player.sock") && gone.stderr.contains("is it running"), gone.all)
    }

    func testSyncWithItemsFailingForGoodExits2() async throws {
        // Every media request refused: each file fails its maxAttempts (3) and the sync ends failed.
        try await stack.api.injectFaults("/media/", [["status": 403, "subStatus": 4032, "repeat": 9]])
        let sync = try Command.ctl(stack, ["sync", "st-10", "--json", "--wait-timeout", "60"])
        XCTAssertEqual(sync.status, 2, sync.all + stack.logs)
        XCTAssertEqual(sync.json?["complete"], true, sync.all)
        XCTAssertEqual(sync.json?["failed"]?.intValue, 3, sync.all)
        XCTAssertTrue(sync.stderr.contains("3 of 3 items of st-10 failed"), sync.all)
    }

    func testOfflineAddWaitsAndWaitTimeoutExits75() async throws {
        // Slow media: the wait gives up after its timeout while the download goes on.
        try await stack.api.injectFaults("/media/", [["bytesPerSecond": 20_000, "repeat": 50]])
        let slow = try Command.ctl(stack, ["offline", "add", "tr-1", "--wait", "--wait-timeout", "0.5"])
        XCTAssertEqual(slow.status, 75, slow.all + stack.logs)
        XCTAssertTrue(slow.stderr.contains("--wait-timeout"), slow.all)
        _ = try await stack.api.delete("/_control/faults")

        // Piped, with --json: no bar, and the final status once the product is on the device.
        let added = try Command.ctl(stack, ["offline", "add", "tr-1", "--wait", "--json"])
        XCTAssertEqual(added.status, 0, added.all + stack.logs)
        XCTAssertEqual(added.json?["state"], "cached", added.all)
        XCTAssertFalse(added.stderr.contains("\r"), added.all)
        let token = try XCTUnwrap(added.json?["token"]?.stringValue)

        let list = try Command.ctl(stack, ["offline", "list"])
        XCTAssertTrue(list.stdout.contains(token) && list.stdout.contains("cached"), list.all)
        // A display name for the download (the product's title until one is given), in the table.
        XCTAssertTrue(list.stdout.contains("NAME"), list.all)
        let named = try Command.ctl(stack, ["offline", "add", "tr-1", "--display-name", "Kitchen mix", "--reference-id", "app-7"])
        XCTAssertEqual(named.status, 0, named.all + stack.logs)
        XCTAssertTrue(named.stdout.contains("Kitchen mix") && named.stdout.contains(token), named.all)
        let relisted = try Command.ctl(stack, ["offline", "list", "--json"])
        let entry = relisted.json?["items"]?.arrayValue?.first { $0["token"]?.stringValue == token }
        XCTAssertEqual(entry?["displayName"], "Kitchen mix", relisted.all)
        XCTAssertEqual(entry?["referenceId"], "app-7", relisted.all)

        // Licenses: renew with rental terms, shown in the table; both terms at once is refused.
        let renewed = try Command.ctl(stack, ["offline", "renew-license", token, "--rental-seconds", "3600"])
        XCTAssertEqual(renewed.status, 0, renewed.all + stack.logs)
        XCTAssertTrue(renewed.stdout.contains("rental until"), renewed.all)
        let both = try Command.ctl(stack, ["offline", "renew-license", token, "--rental-seconds", "60", "--purchase"])
        XCTAssertEqual(both.status, 1, both.all)
        XCTAssertTrue(both.stderr.contains("rentalSeconds"), both.all)
        let preloaded = try Command.ctl(stack, ["offline", "preload-license", "tr-2", "--purchase", "--json"])
        XCTAssertEqual(preloaded.json?["state"], "discovered", preloaded.all)
        XCTAssertEqual(preloaded.json?["license"]?["kind"], "purchase", preloaded.all)

        let deleted = try Command.ctl(stack, ["offline", "delete", token, "--json"])
        XCTAssertEqual(deleted.json?["state"], "deleted", deleted.all)
    }

    func testWatchPrintsEventsAsJSONLines() throws {
        // Once the watcher has subscribed, cause events.
        let watch = try WatchRun(stack, ["downloader", "downloads", "--json", "--count", "2"], subscribedTo: "downloader")
        XCTAssertEqual(try Command.ctl(stack, ["sync", "st-10"]).status, 0)
        let (text, status) = watch.finish()
        XCTAssertEqual(status, 0, text)
        let lines = text.split(separator: "\n")
        XCTAssertEqual(lines.count, 2, text)
        for line in lines {
            let event = try JSONCoding.parse(Array(line.utf8))
            XCTAssertEqual(event["service"], "downloader", text)
            XCTAssertEqual(event["topic"], "downloads", text)
            XCTAssertNotNil(event["type"]?.stringValue, text)
        }
    }
}

/// The shell completion and the man page name every subcommand (no services needed).
final class CtlDocsTests: XCTestCase {
    func testCompletionScriptAndManPageCoverTheCommands() throws {
        let bash = try Command.run(Binaries.path("cassettectl"), ["--generate-completion-script", "bash"])
        XCTAssertEqual(bash.status, 0, bash.all)
        // roff writes a hyphen as `\-`.
        let page = try String(contentsOf: Command.repository.appendingPathComponent("docs/cassettectl.1"), encoding: .utf8)
            .replacingOccurrences(of: "\\-", with: "-")
        let commands = [
            "status", "call", "watch", "stations", "sync", "offline", "policy", "network", "sync-now", "tune",
            "skip", "load", "queue", "play", "pause", "seek", "next", "stop", "now", "config", "playlog", "delete-all",
            "preload-license", "renew-license",
        ]
        for command in commands {
            XCTAssertTrue(bash.stdout.contains(command), "completion lacks \(command)")
            XCTAssertTrue(page.contains(command), "docs/cassettectl.1 lacks \(command)")
        }
        let help = try Command.run(Binaries.path("cassettectl"), ["--help"])
        let nested: Set = ["delete-all", "preload-license", "renew-license"]
        for command in commands where !nested.contains(command) { XCTAssertTrue(help.stdout.contains(command), "--help lacks \(command)") }
    }
}
