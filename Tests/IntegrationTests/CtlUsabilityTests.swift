import Foundation
import Glibc
import TestSupport
import Wire
import XCTest

/// cassettectl as device engineers use it, against the real services: options before the
/// command, --json on every command and on failures, the spellings of booleans and sizes,
/// failures that surface after the call (a product that does not play, a delivery that did
/// not go), offlines named by product, and a watched service that goes away.
final class CtlUsabilityTests: XCTestCase {
    var stack: CassetteStack!

    override func setUpWithError() throws { stack = try CassetteStack() }
    override func tearDown() { stack?.stop() }

    var ctl: String { Binaries.path("cassettectl") }

    func testGlobalOptionsBeforeTheCommand() throws {
        let status = try Command.run(ctl, ["--runtime-dir", stack.dir.runtimeDir, "--json", "--timeout", "5", "status"])
        XCTAssertEqual(status.status, 0, status.all)
        for service in ["downloader", "player", "reporter"] {
            XCTAssertEqual(status.json?[service]?["service"]?.stringValue, service, status.all)
        }
        let call = try Command.run(ctl, ["--json", "--runtime-dir=\(stack.dir.runtimeDir)", "call", "player", "service.status"])
        XCTAssertEqual(call.json?["service"], "player", call.all)
        // Still accepted after the command, and there the later one wins.
        let after = try Command.run(ctl, ["--timeout", "0.001", "now", "--json", "--timeout", "5", "--runtime-dir", stack.dir.runtimeDir])
        XCTAssertEqual(after.status, 0, after.all)
        XCTAssertNotNil(after.json?["playbackState"], after.all)
        // A table for people: human uptime.
        let table = try Command.run(ctl, ["--runtime-dir", stack.dir.runtimeDir, "status"])
        XCTAssertTrue(table.stdout.contains("downloader") && table.stdout.contains(" s "), table.all)
    }

    func testJSONOnCallAndOnFailures() throws {
        let ok = try Command.ctl(stack, ["call", "reporter", "playlog.status", "--json"])
        XCTAssertEqual(ok.status, 0, ok.all)
        XCTAssertNotNil(ok.json?["pending"], ok.all)

        let unknown = try Command.ctl(stack, ["call", "reporter", "no.such", "--json"])
        XCTAssertEqual(unknown.status, 1, unknown.all)
        XCTAssertEqual(unknown.json?["error"]?["name"], "MethodNotFound", unknown.all)
        XCTAssertEqual(unknown.json?["error"]?["code"]?.intValue, -32601, unknown.all)
        XCTAssertNotNil(unknown.json?["error"]?["message"]?.stringValue, unknown.all)
        XCTAssertTrue(unknown.stderr.contains("reporter: MethodNotFound:"), unknown.all)

        let refused = try Command.ctl(stack, ["offline", "status", "tr-404", "--json"])
        XCTAssertEqual(refused.status, 1, refused.all)
        XCTAssertEqual(refused.json?["error"]?["name"], "UnknownOffline", refused.all)
        XCTAssertTrue(refused.stderr.contains("cassettectl offline list"), refused.all)

        let nowhere = try Command.run(ctl, ["--json", "--runtime-dir", stack.dir.path + "/nowhere", "call", "player", "service.status"])
        XCTAssertEqual(nowhere.status, 69, nowhere.all)
        XCTAssertEqual(nowhere.json?["error"]?["name"], "NoSocket", nowhere.all)
        XCTAssertEqual(nowhere.json?["error"]?["code"]?.intValue, 69, nowhere.all)
    }

    func testBooleanSpellingsAndSizes() throws {
        let set = try Command.ctl(
            stack,
            [
                "policy", "set", "--allow-cellular", "yes", "--allow-metered", "ON",
                "--max-cache-bytes", "1.5GiB", "--min-free-bytes", "500M", "--json",
            ])
        XCTAssertEqual(set.status, 0, set.all + stack.logs)
        XCTAssertEqual(set.json?["allowCellular"], true, set.all)
        XCTAssertEqual(set.json?["allowMetered"], true, set.all)
        XCTAssertEqual(set.json?["maxCacheBytes"]?.intValue, 1_610_612_736, set.all)
        XCTAssertEqual(set.json?["minFreeBytes"]?.intValue, 500_000_000, set.all)
        // Sizes out, for people.
        let table = try Command.ctl(stack, ["policy", "get"])
        XCTAssertTrue(table.stdout.contains("1.6 GB (1610612736 bytes)") && table.stdout.contains("500 MB"), table.all)

        for (word, value) in [("off", false), ("true", true), ("no", false), ("1", true)] {
            let run = try Command.ctl(stack, ["policy", "set", "--allow-cellular", word, "--json"])
            XCTAssertEqual(run.json?["allowCellular"], .bool(value), "\(word): \(run.all)")
        }
        let unbounded = try Command.ctl(stack, ["policy", "set", "--max-cache-bytes", "none", "--set", "allowMetered=off", "--json"])
        XCTAssertEqual(unbounded.json?["maxCacheBytes"], .null, unbounded.all)
        XCTAssertEqual(unbounded.json?["allowMetered"], false, unbounded.all)

        let offline = try Command.ctl(stack, ["config", "set", "--offline-mode", "on", "--json"])
        XCTAssertEqual(offline.json?["offlineMode"], true, offline.all)
        let online = try Command.ctl(stack, ["config", "set", "--offline-mode", "FALSE", "--json"])
        XCTAssertEqual(online.json?["offlineMode"], false, online.all)
        let metered = try Command.ctl(stack, ["network", "set", "wifi", "--metered", "yes", "--json"])
        XCTAssertEqual(metered.json?["metered"], true, metered.all)

        for args in [
            ["policy", "set", "--allow-cellular", "maybe"], ["policy", "set", "--max-cache-bytes", "lots"],
            ["config", "set", "--offline-mode", "2"], ["policy", "set", "--min-free-bytes", "none"],
        ] {
            let run = try Command.ctl(stack, args)
            XCTAssertEqual(run.status, 64, "\(args): \(run.all)")
        }
    }

    func testLoadOfAFailingProductExitsNonZero() throws {
        // Offline mode and a product not on the device: the player accepts the load, then fails it.
        XCTAssertEqual(try Command.ctl(stack, ["config", "set", "--offline-mode", "yes"]).status, 0)
        let load = try Command.ctl(stack, ["load", "tr-1"])
        XCTAssertEqual(load.status, 2, load.all + stack.logs)
        XCTAssertFalse(load.stdout.contains("loaded"), load.all)
        XCTAssertTrue(load.stderr.contains("player: IllegalPlaybackRequest:"), load.all)
        XCTAssertTrue(load.stderr.contains("cassettectl config set --offline-mode no"), "the hint names a command: \(load.all)")
        let json = try Command.ctl(stack, ["load", "tr-1", "--play", "--json"])
        XCTAssertEqual(json.status, 2, json.all)
        XCTAssertEqual(json.json?["error"]?["name"], "IllegalPlaybackRequest", json.all)
        // Nothing loaded: play says so.
        let play = try Command.ctl(stack, ["play"])
        XCTAssertEqual(play.status, 2, play.all)
        XCTAssertTrue(play.stderr.contains("nothing to play") && play.stderr.contains("cassettectl load"), play.all)

        // Online again: the same product plays, and load says so only then.
        XCTAssertEqual(try Command.ctl(stack, ["config", "set", "--offline-mode", "no"]).status, 0)
        let plays = try Command.ctl(stack, ["load", "tr-1", "--play"])
        XCTAssertEqual(plays.status, 0, plays.all + stack.logs)
        XCTAssertTrue(plays.stdout.hasPrefix("playing: First Light — Cassette Demo Ensemble (tr-1)"), plays.all)
        XCTAssertEqual(try Command.ctl(stack, ["now", "--json"]).json?["playbackState"], "PLAYING")
    }

    func testPlaylogFlushExitsNonZeroWhenDeliveryFails() async throws {
        try await stack.api.injectFaults("/v1/plays", [["status": 500, "repeat": 1000]])
        let event = String(decoding: JSONCoding.data(["event": Self.play()]), as: UTF8.self)
        let record = try Command.ctl(stack, ["call", "reporter", "playlog.record", event])
        XCTAssertEqual(record.status, 0, record.all)
        let failed = try Command.ctl(stack, ["playlog", "flush"])
        XCTAssertEqual(failed.status, 2, failed.all + stack.logs)
        XCTAssertTrue(failed.stderr.contains("delivery failed"), failed.all)
        XCTAssertTrue(failed.stdout.contains("pending"), "the status is still shown: \(failed.all)")
        let json = try Command.ctl(stack, ["playlog", "flush", "--json"])
        XCTAssertEqual(json.status, 2, json.all)
        XCTAssertNotNil(json.json?["error"]?["name"]?.stringValue, json.all)
        XCTAssertEqual(json.json?["result"]?["attempted"], true, json.all)

        _ = try await stack.api.delete("/_control/faults")
        let delivered = try Command.ctl(stack, ["playlog", "flush", "--json"])
        XCTAssertEqual(delivered.status, 0, delivered.all)
        XCTAssertEqual(delivered.json?["lastAttempt"]?["result"], "delivered", delivered.all)
        // Nothing pending: nothing attempted, nothing failed.
        XCTAssertEqual(try Command.ctl(stack, ["playlog", "flush"]).status, 0)
    }

    func testOfflineCommandsTakeAProductId() throws {
        let added = try Command.ctl(stack, ["offline", "add", "tr-1", "--wait", "--json"])
        XCTAssertEqual(added.status, 0, added.all + stack.logs)
        let token = try XCTUnwrap(added.json?["token"]?.stringValue, added.all)
        let status = try Command.ctl(stack, ["offline", "status", "tr-1", "--json"])
        XCTAssertEqual(status.json?["token"]?.stringValue, token, status.all)
        let watched = try Command.ctl(stack, ["offline", "watch", "tr-1"])
        XCTAssertEqual(watched.status, 0, watched.all)
        XCTAssertTrue(watched.stdout.contains(token) && watched.stdout.contains("cached"), watched.all)

        // tr-7 is replaced by tr-7b at the origin: offlining both makes "tr-7b" name two offlines.
        XCTAssertEqual(try Command.ctl(stack, ["offline", "add", "tr-7", "--wait"]).status, 0)
        XCTAssertEqual(try Command.ctl(stack, ["offline", "add", "tr-7b", "--wait"]).status, 0)
        let ambiguous = try Command.ctl(stack, ["offline", "delete", "tr-7b"])
        XCTAssertEqual(ambiguous.status, 64, ambiguous.all)
        XCTAssertTrue(ambiguous.stderr.contains("tr-7b names 2 offlines") && ambiguous.stderr.contains("tr-7→tr-7b"), ambiguous.all)
        // The requested id alone is unambiguous.
        let byRequested = try Command.ctl(stack, ["offline", "delete", "tr-7", "--json"])
        XCTAssertEqual(byRequested.json?["state"], "deleted", byRequested.all)

        let deleted = try Command.ctl(stack, ["offline", "delete", "tr-1", "--json"])
        XCTAssertEqual(deleted.json?["token"]?.stringValue, token, deleted.all)
        XCTAssertEqual(deleted.json?["state"], "deleted", deleted.all)
    }

    func testWatchSaysWhenAServiceGoesAway() throws {
        let watch = try WatchRun(stack, ["--json"], subscribedTo: "reporter")
        stack.reporter.signal(SIGTERM)
        XCTAssertEqual(try stack.reporter.waitExit(), 0)
        usleep(300_000)
        XCTAssertTrue(watch.process.isRunning, "the other two are still watched")
        stack.downloader.signal(SIGTERM)
        stack.player.signal(SIGTERM)
        let (text, status) = watch.finish()
        XCTAssertEqual(status, 69, text)
        let gone = text.split(separator: "\n").compactMap { try? JSONCoding.parse(Array($0.utf8)) }.filter { $0["type"] == "Gone" }
        XCTAssertEqual(gone.map { $0["service"]?.stringValue ?? "" }.sorted(), ["downloader", "player", "reporter"], text)
        XCTAssertEqual(gone.first?["service"], "reporter", "the reporter went first: \(text)")
        XCTAssertEqual(gone.first?["data"]?["reason"], "connection closed", text)
    }

    func testWatchOfOneServiceSaysItIsGoneAsText() throws {
        let watch = try WatchRun(stack, ["player"], subscribedTo: "player")
        stack.player.signal(SIGTERM)
        let (text, status) = watch.finish()
        XCTAssertEqual(status, 69, text)
        XCTAssertTrue(text.contains("player: gone (connection closed)"), text)
    }

    static func play() -> JSONValue {
        [
            "eventId": .string(UUID().uuidString.lowercased()), "productId": "tr-1", "requestedProductId": "tr-1",
            "playbackSessionId": .string(UUID().uuidString.lowercased()),
            "startedAt": "2026-11-21T10:00:00.000Z", "endedAt": "2026-11-21T10:03:00.000Z",
            "startPosition": 0, "endPosition": 180.5, "offline": false, "actions": [],
        ]
    }
}

/// Permission denied on a socket names the group to join. The tests run as root, which
/// connect() never refuses, so cassettectl runs as nobody (setpriv) against a root-owned
/// socket of mode 0600; as another user, a socket of mode 0000 does.
final class CtlPermissionTests: XCTestCase {
    func testPermissionDeniedSaysToJoinTheSocketGroup() throws {
        let dir = try TestDirectory(prefix: "ctlperm")
        defer { dir.remove() }
        chmod(dir.path, 0o755)
        chmod(dir.runtimeDir, 0o755)
        let path = dir.socketPath("player")
        let listener = try Self.listen(path)
        defer { close(listener) }
        var command = [Binaries.path("cassettectl")]
        if getuid() == 0 {
            let setpriv = "/usr/bin/setpriv"
            guard FileManager.default.isExecutableFile(atPath: setpriv) else { throw XCTSkip("needs setpriv to run as another user") }
            chmod(path, 0o600)
            command = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"] + command
        } else {
            chmod(path, 0)
        }
        let run = try Command.run(command[0], Array(command.dropFirst()) + ["now", "--runtime-dir", dir.runtimeDir])
        XCTAssertEqual(run.status, 69, run.all)
        XCTAssertEqual(
            run.stderr,
            "cassettectl: permission denied on \(path): add your user to the cassette-clients group (sudo usermod -aG cassette-clients $USER) and log in again\n"
        )
        let json = try Command.run(command[0], Array(command.dropFirst()) + ["--json", "--runtime-dir", dir.runtimeDir, "status", "player"])
        XCTAssertEqual(json.status, 69, json.all)
        XCTAssertEqual(json.json?["player"]?["error"]?["name"], "PermissionDenied", json.all)
    }

    /// A listening Unix socket at `path`.
    static func listen(_ path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        let bound = UnixSocketAddress.withSockaddr(path) { bind(fd, $0, $1) } ?? -1
        guard fd >= 0, bound == 0, Glibc.listen(fd, 8) == 0 else { throw HarnessError("cannot listen on \(path): errno \(errno)") }
        return fd
    }
}
