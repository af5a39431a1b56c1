import Foundation
import GRDB
import TestSupport
import Wire
import XCTest

@testable import StateDB

/// Feed.fm stations from the catalog alone: no origin, no network.
final class StationPlaybackTests: XCTestCase {
    /// A local offline station plays its verified items in station order (skipping one whose
    /// file is not there yet), with the unreachable origin reported as OfflineOnly; station.skip
    /// moves on; past the last item the station ends in IDLE.
    func testLocalStationPlaysWithNoOrigin() async throws {
        let h = try PlayerHarness()
        let one = try h.makeTrack("tr-9-01", seconds: 1, frequency: 330)
        let three = try h.makeTrack("tr-9-03", seconds: 1, frequency: 550)
        let four = try h.makeTrack("tr-9-04", seconds: 1, frequency: 770)
        try h.addStation(
            "st-9", name: "Focus",
            items: [
                ("tr-9-01", one, "verified"), ("tr-9-02", "tracks/tr-9-02.flac", "partial"),
                ("tr-9-03", three, "verified"), ("tr-9-04", four, "verified"),
            ])
        // Port 9 (discard) on loopback: nothing listens, so the origin is unreachable at once.
        // Paced like a sound card: the skip below must land while the first item still plays,
        // which an unpaced device (three 1 s items done in milliseconds) does not guarantee.
        let client = try await h.start(
            pace: "realtime", extraArgs: ["--origin", "http://127.0.0.1:9"],
            environment: ["CASSETTE_CLIENT_TOKEN": "demo", "CASSETTE_CLIENT_SECRET": "demo"])
        let log = EventLog(client)
        // Reported as status at once, and as an `OfflineOnly` event to subscribers present then.
        var availability = ""
        for _ in 0..<100 where availability != "OFFLINE_ONLY" {
            availability = try await h.status()["availability"]?.stringValue ?? ""
            try await Task.sleep(for: .milliseconds(50))
        }
        XCTAssertEqual(availability, "OFFLINE_ONLY")
        _ = try await h.call("station.tune", ["stationId": "st-9"])
        let status = try await h.status()
        XCTAssertEqual(status["activeStation"]?["id"]?.stringValue, "st-9")
        XCTAssertEqual(status["availability"]?.stringValue, "OFFLINE_ONLY")
        let events = try await log.untilState("IDLE").map(EventLog.describe).filter { $0 != "OfflineOnly" }
        XCTAssertEqual(
            events,
            [
                "State:NOT_PLAYING", "Transition:->tr-9-01", "State:PLAYING", "Transition:tr-9-01>tr-9-03",
                "Transition:tr-9-03>tr-9-04", "Transition:tr-9-04>-", "State:IDLE",
            ])
        let expected = try h.decoded(one) + h.decoded(three) + h.decoded(four)
        let captured = h.captured
        XCTAssertEqual(captured.count, expected.count)
        XCTAssertTrue(
            captured == expected,
            "the station's verified items, in order, gapless; first difference at byte \((0..<min(captured.count, expected.count)).first { captured[$0] != expected[$0] } ?? -1)"
        )
        let played = try await h.catalogPlayed("st-9")
        XCTAssertEqual(played, ["tr-9-01", "tr-9-03", "tr-9-04"])

        // station.skip: from the first item straight to the next one.
        _ = try await h.call("player.config.set", ["offlineMode": true])
        _ = try await h.call("station.tune", ["stationId": "st-9"])
        _ = try await log.until { $0.type == "MediaProductTransition" }
        _ = try await h.call("station.skip")
        let skipped = try await log.until {
            $0.type == "MediaProductTransition" && $0.data["activeMediaProduct"]?["productId"]?.stringValue == "tr-9-03"
        }
        XCTAssertEqual(skipped.last?.data["activeMediaProduct"]?["sourceId"]?.stringValue, "st-9")
        _ = try await h.call("player.reset")
        _ = try await log.untilState("IDLE")
    }

    /// A station the device does not hold is refused with a stable name, and nothing changes.
    func testUnknownStationIsRefused() async throws {
        let h = try PlayerHarness()
        try await h.start()
        do {
            _ = try await h.call("station.tune", ["stationId": "st-404"])
            XCTFail("tuning an unknown station must fail")
        } catch let error as RPCError {
            XCTAssertEqual(error.name, "StationNotPlayable")
        }
        do {
            _ = try await h.call("station.skip")
            XCTFail("skip with no station must fail")
        } catch let error as RPCError {
            XCTAssertEqual(error.name, "NothingToPlay")
        }
        let status = try await h.status()
        XCTAssertEqual(status["playbackState"]?.stringValue, "IDLE")
    }
}

extension PlayerHarness {
    /// Items of `stationId` marked heard, in station order.
    func catalogPlayed(_ stationId: String) async throws -> [String] {
        // The player marks an item heard as it starts; give the write a moment.
        try await Task.sleep(for: .milliseconds(200))
        return try await catalog.pool.read { db in
            try String.fetchAll(
                db, sql: "SELECT itemId FROM stationItems WHERE stationId = ? AND playedAt IS NOT NULL ORDER BY position",
                arguments: [stationId])
        }
    }
}
