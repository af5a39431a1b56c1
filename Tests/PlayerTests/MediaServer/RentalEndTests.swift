import Foundation
import GRDB
import HTTPClient
import TestSupport
import Wire
import XCTest

@testable import StateDB

/// A license that ends while its product plays ends the product there, in the player and the
/// local media server alike: the real origin grants the rental (a long one, renewed as a
/// rental of a few seconds once playback runs, `offline.renewLicense`), the real downloader
/// stores it, and the real player plays in real time (`--audio-pace realtime`).
final class RentalEndTests: XCTestCase {
    /// Content longer than the shared catalog's: `tr-1` 38 s (FLAC, about 500 KB, more than a
    /// slow reader's and the server's socket buffers hold), `vid-1` 12 s (HLS).
    static let longContent = ["--tracks-per-station", "1", "--seconds", "20", "--video-seconds", "12"]

    private func rig() async throws -> MediaServerTests.Rig {
        let origin = try OriginProcess.start(reusing: OriginFixture.freshDataDirectory(generatedWith: Self.longContent))
        let rig = try MediaServerTests.Rig(takingOver: origin)
        _ = try await rig.call(rig.downloader, "network.set", ["type": "wifi"])
        return rig
    }

    /// A player connection subscribed to `player` events.
    private func playerEvents(_ rig: MediaServerTests.Rig) async throws -> (RPCClient, EventLog) {
        let client = try await rig.player.client()
        let log = EventLog(client)
        _ = try await client.call("events.subscribe", ["topics": ["player"]])
        return (client, log)
    }

    /// Loads and plays `productId`, returning once at least `position` seconds were heard.
    private func play(_ productId: String, type: String, client: RPCClient, log: EventLog, position: Double = 1) async throws {
        let product: JSONValue = [
            "mediaProduct": [
                "productId": .string(productId), "productType": .string(type),
                "referenceId": .string("ref-\(productId)"),
            ]
        ]
        _ = try await client.call("player.load", product, timeout: .seconds(10))
        _ = try await client.call("player.play", timeout: .seconds(10))
        _ = try await log.untilState("PLAYING", timeout: 20)
        try await waitUntilHeard(position, client: client)
    }

    private func waitUntilHeard(_ position: Double, client: RPCClient) async throws {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if try await client.call("player.status")["assetPosition"]?.doubleValue ?? 0 >= position { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        XCTFail("\(position) s were not heard within 20 s")
    }

    /// Renews `token`'s license as a rental of `seconds`, and returns when it ends (server time:
    /// the origin's clock is the test's, not moved) with the position the player will have
    /// reached then, when `client` plays it.
    private func shortRental(
        _ rig: MediaServerTests.Rig, token: String, seconds: Int,
        client: RPCClient? = nil
    ) async throws -> (endsAt: Date, position: Double?) {
        let renewed = try await rig.call(
            rig.downloader, "offline.renewLicense",
            ["token": .string(token), "rentalSeconds": .number(Double(seconds))])
        let endsAt = try XCTUnwrap(parseServerTime(renewed["license"]?["expiresAt"]?.stringValue), "\(renewed)")
        guard let client else { return (endsAt, nil) }
        let now = Date()
        let status = try await client.call("player.status")
        let heard = try XCTUnwrap(status["assetPosition"]?.doubleValue)
        XCTAssertGreaterThan(endsAt.timeIntervalSince(now), 0.5, "the rental ends after the test looked at the position")
        return (endsAt, heard + endsAt.timeIntervalSince(now))
    }

    /// The closed play event of `productId` the player keeps in its table (no reporter runs).
    private func closedPlay(_ rig: MediaServerTests.Rig, _ productId: String) async throws -> [String: Any] {
        let catalog = try StateDB(stateDirectory: rig.dir.stateDir)
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let bodies = try await catalog.pool.read { db in
                try String.fetchAll(db, sql: "SELECT body FROM playerPlays WHERE state != 'open' AND kind = 'play'")
            }
            for body in bodies {
                let play = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
                if play["productId"] as? String == productId { return play }
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw HarnessError("no closed play event of \(productId)")
    }

    /// The player's stop: the error event, then IDLE, when it arrived, and nothing else between.
    private func expectStop(_ log: EventLog, productId: String, file: StaticString = #filePath, line: UInt = #line) async throws -> Date {
        let events = try await log.until(timeout: 20) { $0.type == "OfflineNotValid" || $0.type == "MediaProductTransition" }
        let stoppedAt = Date()
        let error = try XCTUnwrap(events.last)
        XCTAssertEqual(error.type, "OfflineNotValid", "playback ran on to the end: \(events.map(EventLog.describe))", file: file, line: line)
        XCTAssertEqual(error.data["productId"]?.stringValue, productId, file: file, line: line)
        XCTAssertEqual(error.data["referenceId"]?.stringValue, "ref-\(productId)", file: file, line: line)
        let after = try await log.untilState("IDLE", timeout: 5)
        XCTAssertEqual(after.map(EventLog.describe), ["State:IDLE"], "IDLE right after the error", file: file, line: line)
        return stoppedAt
    }

    /// The play event ends where sound stopped, at the end of the rental.
    private func assertPlayEnded(
        _ play: [String: Any], at position: Double, endsAt: Date,
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let endPosition = try XCTUnwrap(play["endPosition"] as? Double, file: file, line: line)
        XCTAssertEqual(endPosition, position, accuracy: 2, "endPosition is where the rental ended", file: file, line: line)
        let endedAt = try XCTUnwrap(parseServerTime(play["endedAt"] as? String), "\(play)", file: file, line: line)
        XCTAssertEqual(endedAt.timeIntervalSince(endsAt), 0, accuracy: 2, "endedAt is the rental's end", file: file, line: line)
    }

    // MARK: The player

    /// The HLS video of the report: its audio plays until the rental ends, then stops there.
    func testARentalEndingMidPlayStopsTheVideoThere() async throws {
        let rig = try await rig()
        defer { rig.discard() }
        let (token, _) = try await rig.offline(["productId": "vid-1", "rentalSeconds": 3600])
        let (client, log) = try await playerEvents(rig)
        defer { Task { await client.close() } }
        try await play("vid-1", type: "VIDEO", client: client, log: log)
        let (endsAt, position) = try await shortRental(rig, token: token, seconds: 3, client: client)
        let stoppedAt = try await expectStop(log, productId: "vid-1")
        XCTAssertEqual(stoppedAt.timeIntervalSince(endsAt), 0, accuracy: 1.5, "stopped when the rental ended")
        let play = try await closedPlay(rig, "vid-1")
        try assertPlayEnded(play, at: try XCTUnwrap(position), endsAt: endsAt)
        let status = try await client.call("player.status")
        XCTAssertEqual(status["playbackState"]?.stringValue, "IDLE")
        print(
            "rental end: vid-1 stopped \(String(format: "%.3f", stoppedAt.timeIntervalSince(endsAt))) s after the rental's end; "
                + "endPosition \(play["endPosition"] ?? "-") (expected \(String(format: "%.3f", position ?? 0)))")
    }

    /// An audio product (a progressive TRACK) does the same.
    func testARentalEndingMidPlayStopsTheTrackThere() async throws {
        let rig = try await rig()
        defer { rig.discard() }
        let (token, _) = try await rig.offline(["productId": "tr-1", "rentalSeconds": 3600])
        let (client, log) = try await playerEvents(rig)
        defer { Task { await client.close() } }
        try await play("tr-1", type: "TRACK", client: client, log: log)
        let (endsAt, position) = try await shortRental(rig, token: token, seconds: 3, client: client)
        let stoppedAt = try await expectStop(log, productId: "tr-1")
        XCTAssertEqual(stoppedAt.timeIntervalSince(endsAt), 0, accuracy: 1.5, "stopped when the rental ended")
        let play = try await closedPlay(rig, "tr-1")
        try assertPlayEnded(play, at: try XCTUnwrap(position), endsAt: endsAt)
        // Loaded again, it is refused for the same reason.
        do {
            _ = try await client.call("player.load", PlayerHarness.product("tr-1"), timeout: .seconds(10))
            XCTFail("a track whose rental ended does not load")
        } catch let error as RPCError {
            XCTAssertEqual(error.name, "OfflineNotValid")
        }
    }

    // MARK: The media server

    /// After the end every path answers 403 naming `OfflineNotValid`, and an answer still being
    /// read when the rental ends stops there rather than running on to its last byte.
    func testTheMediaServerCutsAndRefusesAtTheRentalsEnd() async throws {
        let rig = try await rig()
        defer { rig.discard() }
        let started = try await rig.call(rig.player, "media.server.start")
        let base = try XCTUnwrap(started["url"]?.stringValue)
        let (track, _) = try await rig.offline(["productId": "tr-1", "rentalSeconds": 3600])
        let (video, _) = try await rig.offline(["productId": "vid-1", "rentalSeconds": 3600])
        let located = try await rig.call(rig.player, "media.locate", ["productId": "tr-1"])
        let url = try XCTUnwrap(located["url"]?.stringValue)
        // While the license holds, a slow reader gets every byte (nothing is dropped at the close).
        let whole = try await SlowHTTPReader.read(url, bytesPerSecond: 16_000, fastAfter: Date().addingTimeInterval(1.5))
        XCTAssertTrue(whole.complete, "a slow reader got part of the file: \(whole)")
        let (trackEnds, _) = try await shortRental(rig, token: track, seconds: 3)
        let (videoEnds, _) = try await shortRental(rig, token: video, seconds: 3)
        let reading = Task { try await SlowHTTPReader.read(url, bytesPerSecond: 16_000, fastAfter: trackEnds.addingTimeInterval(2)) }
        let outcome = try await reading.value
        XCTAssertEqual(outcome.status, 200)
        XCTAssertFalse(outcome.complete, "the answer ran on past the rental's end: \(outcome)")
        let endedAt = try XCTUnwrap(outcome.endedAt, "the connection never ended: \(outcome)")
        XCTAssertEqual(endedAt.timeIntervalSince(trackEnds), 0, accuracy: 1, "cut when the rental ended: \(outcome)")
        XCTAssertTrue(outcome.reset, "reset, not a clean end: \(outcome)")

        // From then on: 403, saying why, on every path of both products.
        while Date() < videoEnds { try await Task.sleep(for: .milliseconds(100)) }
        let name = URL(fileURLWithPath: url).lastPathComponent
        for path in [
            "tr-1/\(name)", "tr-1/images/poster.png", "vid-1/master.m3u8", "vid-1/v0/index.m3u8", "vid-1/v0/seg000.ts",
            "vid-1/keys/k-vid-1",
        ] {
            let refused = try await rig.get(base + "/p/" + path)
            XCTAssertEqual(refused.status, 403, path)
            XCTAssertTrue(
                String(decoding: refused.body, as: UTF8.self).hasPrefix("OfflineNotValid: "), "\(path): \(String(decoding: refused.body, as: UTF8.self))")
        }
        print(
            "rental end: media server cut tr-1 after \(outcome.bodyBytes) of \(outcome.contentLength ?? 0) bytes, "
                + "\(String(format: "%.3f", endedAt.timeIntervalSince(trackEnds))) s after the rental's end")
    }

    /// The player and the media server end a product at the same instant.
    func testThePlayerAndTheMediaServerEndAtTheSameInstant() async throws {
        let rig = try await rig()
        defer { rig.discard() }
        _ = try await rig.call(rig.player, "media.server.start")
        let (token, _) = try await rig.offline(["productId": "tr-1", "rentalSeconds": 3600])
        let located = try await rig.call(rig.player, "media.locate", ["productId": "tr-1"])
        let url = try XCTUnwrap(located["url"]?.stringValue)
        let (client, log) = try await playerEvents(rig)
        defer { Task { await client.close() } }
        try await play("tr-1", type: "TRACK", client: client, log: log, position: 0.5)
        let (endsAt, _) = try await shortRental(rig, token: token, seconds: 3)
        let reading = Task { try await SlowHTTPReader.read(url, bytesPerSecond: 16_000, fastAfter: endsAt.addingTimeInterval(2)) }
        let playerStopped = try await expectStop(log, productId: "tr-1")
        let outcome = try await reading.value
        let serverCut = try XCTUnwrap(outcome.endedAt, "the media server's answer never ended: \(outcome)")
        XCTAssertFalse(outcome.complete, "the media server's answer ran on: \(outcome)")
        XCTAssertEqual(
            playerStopped.timeIntervalSince(serverCut), 0, accuracy: 1,
            "the player stopped at \(playerStopped), the media server cut at \(serverCut): \(outcome)")
        print(
            "rental end: player stopped \(String(format: "%.3f", playerStopped.timeIntervalSince(endsAt))) s, "
                + "media server cut \(String(format: "%.3f", serverCut.timeIntervalSince(endsAt))) s after the rental's end")
    }
}

/// A station's items end with the station: one that expires while an item plays stops there.
final class StationExpiryPlaybackTests: XCTestCase {
    func testAStationThatExpiresMidItemStopsThere() async throws {
        let h = try PlayerHarness()
        let items = try (1...3).map { index in ("tr-s\(index)", try h.makeTrack("tr-s\(index)", seconds: 3, frequency: 300 + 100 * index), "verified") }
        try h.addStation("st-x", name: "Expiring", items: items)
        let config = #"{"player": {"playProgressSeconds": 0.25}}"#
        let client = try await h.start(pace: "realtime", config: config)
        let log = EventLog(client)
        // Its expiry moved to the middle of its second item (as a sync would). No server time
        // was ever seen: the trusted time is the device clock.
        let endsAt = Date().addingTimeInterval(4.5)
        try await h.catalog.pool.write { db in
            try db.execute(sql: "UPDATE stations SET expiresAt = ? WHERE id = 'st-x'", arguments: [endsAt])
        }
        _ = try await h.call("station.tune", ["stationId": "st-x"])
        let events = try await log.until(timeout: 20) {
            $0.type == "OfflineNotValid" || $0.type == "PlaybackStateChanged" && $0.data["playbackState"]?.stringValue == "IDLE"
        }
        let stoppedAt = Date()
        let error = try XCTUnwrap(events.last)
        XCTAssertEqual(error.type, "OfflineNotValid", "the station played on: \(events.map(EventLog.describe))")
        XCTAssertEqual(stoppedAt.timeIntervalSince(endsAt), 0, accuracy: 1.5, "stopped when the station expired")
        let stoppedItem = try XCTUnwrap(error.data["productId"]?.stringValue)
        XCTAssertNotEqual(stoppedItem, "tr-s3", "the expiry came during the first two items")
        let after = try await log.untilState("IDLE", timeout: 5)
        XCTAssertEqual(after.map(EventLog.describe), ["State:IDLE"], "the station ends: IDLE right after the error")
        await h.stop()
        let bodies = try await h.catalog.pool.read { db in try String.fetchAll(db, sql: "SELECT body FROM playerPlays WHERE kind = 'play'") }
        let plays = try bodies.map { try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        XCTAssertFalse(plays.contains { $0["productId"] as? String == "tr-s3" }, "nothing of the item after the expiry is heard")
        let last = try XCTUnwrap(plays.first { $0["productId"] as? String == stoppedItem })
        let endedAt = try XCTUnwrap(parseServerTime(last["endedAt"] as? String))
        XCTAssertEqual(endedAt.timeIntervalSince(endsAt), 0, accuracy: 1.5, "the item's play ends at the expiry")
        XCTAssertLessThan(try XCTUnwrap(last["endPosition"] as? Double), 2.9, "the item did not play to its end")
    }
}
