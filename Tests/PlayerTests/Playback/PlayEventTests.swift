import Foundation
import GRDB
import TestSupport
import Wire
import XCTest

@testable import StateDB

/// Play events reach the origin through the real reporter, and a player killed mid-track
/// loses none: the open play is on disk and is closed and handed over at the next start.
final class PlayEventTests: XCTestCase {
    func testKill9MidTrackLosesNoPlayEvent() async throws {
        let origin = try OriginProcess.start()
        defer { origin.discard() }
        let api = OriginAPI(origin: origin)
        let h = try PlayerHarness()
        let file = try h.makeTrack("tr-a", seconds: 8)
        try h.addProduct("tr-a", file: file, seconds: 8)
        let credentials = ["CASSETTE_CLIENT_TOKEN": "demo", "CASSETTE_CLIENT_SECRET": "demo"]
        let reporter = try ServiceProcess("reporter", in: h.dir, extraArgs: ["--origin", origin.baseURL], environment: credentials)
        defer { reporter.kill9() }
        try reporter.waitReady()
        let config = #"{"player": {"playProgressSeconds": 0.25, "playLogRetrySeconds": 0.2}}"#

        let client = try await h.start(pace: "realtime", config: config)
        let log = EventLog(client)
        _ = try await h.call("player.load", PlayerHarness.product("tr-a"))
        _ = try await h.call("player.play")
        _ = try await log.untilState("PLAYING")
        var position = 0.0
        let began = Date()
        while position < 2, Date().timeIntervalSince(began) < 10 {
            try await Task.sleep(for: .milliseconds(100))
            position = try await h.status()["assetPosition"]?.doubleValue ?? 0
        }
        try await Task.sleep(for: .milliseconds(400))
        h.player?.kill9()
        h.player = nil
        await h.client?.close()

        let open = try await h.catalog.pool.read { db in
            try String.fetchAll(db, sql: "SELECT body FROM playerPlays WHERE state = 'open'")
        }
        XCTAssertEqual(open.count, 1, "the play in progress is on disk")
        var stats = try await api.stats()
        XCTAssertEqual(stats.object("plays").int("unique") ?? 0, 0, "nothing was sent before the play ended")

        // The next start closes it where it had got to and hands it over.
        try await h.start(config: config)
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            stats = try await api.stats()
            if (stats.object("plays").int("unique") ?? 0) >= 1 { break }
            _ = try? await reporter.client().call("playlog.flush", timeout: .seconds(5))
            try await Task.sleep(for: .milliseconds(300))
        }
        XCTAssertEqual(stats.object("plays").int("unique"), 1, "the interrupted play reached the origin once")
        let lines = try String(contentsOf: origin.dataDirectory.appendingPathComponent("plays.jsonl"), encoding: .utf8)
            .split(separator: "\n")
        XCTAssertEqual(lines.count, 1)
        let item = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])["item"] as? [String: Any]
        XCTAssertEqual(item?["productId"] as? String, "tr-a")
        XCTAssertEqual(item?["offline"] as? Bool, true)
        let end = try XCTUnwrap(item?["endPosition"] as? Double)
        XCTAssertGreaterThan(end, 1.8, "closed near where playback was killed")
        XCTAssertLessThan(end, 4)

        // Delivered events leave the player's table.
        var left = 1
        for _ in 0..<50 where left > 0 {
            left = try await h.catalog.pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM playerPlays") ?? 0 }
            try await Task.sleep(for: .milliseconds(100))
        }
        XCTAssertEqual(left, 0)
    }

    /// Play-event times are trusted time: with the device clock 40 days ahead (libfaketime; the
    /// boot clock left alone, as on a device whose wall clock is wrong), a play heard offline is
    /// stamped with the server time the catalog's anchor carries forward, not the device's.
    func testPlayTimesAreTrustedTimeNotTheDeviceClock() async throws {
        let library = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
        try XCTSkipUnless(FileManager.default.fileExists(atPath: library), "libfaketime is not installed (make deps)")
        let h = try PlayerHarness()
        let file = try h.makeTrack("tr-a", seconds: 4)
        try h.addProduct("tr-a", file: file, seconds: 4)
        // The downloader saw the origin's time a moment ago: the anchor it keeps in the catalog.
        try await h.catalog.pool.write { db in
            try TrustedClock.record(serverTime: Date(), bootNanos: TrustedClock.bootClockNanos(), db: db)
        }
        // Spawned with libfaketime preloaded, the service does not see its command-line options
        // (seen with libfaketime 0.9.10): its settings go in the environment and the config.
        let config = #"{"player": {"playProgressSeconds": 0.25, "audioDevice": "cassette_capture", "audioPace": "realtime"}}"#
        _ = try await h.start(
            pace: "realtime", config: config,
            environment: [
                "CASSETTE_RUNTIME_DIR": h.dir.runtimeDir, "CASSETTE_STATE_DIR": h.dir.stateDir,
                "CASSETTE_CONFIG": try h.dir.writeConfig(config),
                "LD_PRELOAD": library, "FAKETIME": "+40d", "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            ])
        let log = EventLog(try XCTUnwrap(h.client))
        _ = try await h.call("player.load", PlayerHarness.product("tr-a"))
        _ = try await h.call("player.play")
        _ = try await log.untilState("PLAYING")
        try await Task.sleep(for: .milliseconds(1200))
        _ = try await h.call("player.reset")
        await h.stop()

        let bodies = try await h.catalog.pool.read { db in try String.fetchAll(db, sql: "SELECT body FROM playerPlays WHERE kind = 'play'") }
        XCTAssertEqual(bodies.count, 1, "one play, kept by the player (no reporter here)")
        let play = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(try XCTUnwrap(bodies.first).utf8)) as? [String: Any])
        for key in ["startedAt", "endedAt"] {
            let text = try XCTUnwrap(play[key] as? String, key)
            let time = try XCTUnwrap(parseServerTime(text), text)
            XCTAssertLessThan(abs(time.timeIntervalSinceNow), 120, "\(key) \(text) follows the device clock, 40 days ahead, not trusted time")
        }
    }
}
