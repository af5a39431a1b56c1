@testable import Catalog
import Foundation
import GRDB
import TestSupport
import Wire
import XCTest

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
}
