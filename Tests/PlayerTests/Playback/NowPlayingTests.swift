import Foundation
import GRDB
import TestSupport
import Wire
import XCTest

@testable import StateDB

/// What a "now playing" screen needs reaches it through the socket: title, artist, album and
/// length in `player.status`, in `MediaProductTransition` and in its `playbackContext`, with the
/// format filled for every source (a local file, a stream, a station item whose catalog row names
/// no codec); a next product in another format is announced with `PlaybackQualityChanged`; the
/// app's `extras` of a product reach its play event.
final class NowPlayingTests: XCTestCase {
    static let credentials = ["CASSETTE_CLIENT_TOKEN": "demo", "CASSETTE_CLIENT_SECRET": "demo"]

    func testMetadataOfOfflineStreamedAndStationTracksAndAQualityChange() async throws {
        let origin = try OriginProcess.start()
        defer { origin.discard() }
        let h = try PlayerHarness()
        let offline = try h.makeTrack("tr-a", seconds: 3)
        try h.addProduct("tr-a", file: offline, seconds: 3)
        let stationFile = try h.makeTrack("tr-s", seconds: 3, frequency: 660)
        try await h.addBareStation("st-x", itemId: "tr-s", file: stationFile)
        let client = try await h.start(pace: "realtime", extraArgs: ["--origin", origin.baseURL], environment: Self.credentials)
        let log = EventLog(client)

        // A local file, with the app's extras.
        let product: JSONValue = [
            "mediaProduct": [
                "productId": "tr-a", "productType": "TRACK", "referenceId": "ref-a",
                "extras": ["campaign": "spring", "rank": 3],
            ]
        ]
        _ = try await h.call("player.load", product)
        _ = try await h.call("player.play")
        var seen = try await log.until { $0.type == "MediaProductTransition" }
        var transition = try XCTUnwrap(seen.last)
        XCTAssertEqual(transition.data["title"]?.stringValue, "Title tr-a")
        XCTAssertEqual(transition.data["durationSeconds"]?.doubleValue, 3)
        var context = transition.data["playbackContext"]
        XCTAssertEqual(context?["title"]?.stringValue, "Title tr-a")
        XCTAssertEqual(context?["audioCodec"]?.stringValue, "flac")
        XCTAssertGreaterThan(context?["audioBitRate"]?.doubleValue ?? 0, 0, "bit rate of the local file")
        _ = try await log.untilState("PLAYING")
        var status = try await h.status()
        XCTAssertEqual(status["title"]?.stringValue, "Title tr-a")
        XCTAssertEqual(status["playbackContext"]?["title"]?.stringValue, "Title tr-a")
        let body = try await h.openPlayBody()
        XCTAssertEqual(body["extras"]?["campaign"]?.stringValue, "spring", "extras reach the play event: \(body)")
        XCTAssertEqual(body["extras"]?["rank"]?.doubleValue, 3)

        // A stream (AAC at 44.1 kHz), then an Opus stream at 48 kHz queued behind it.
        _ = try await h.call("player.load", PlayerHarness.product("tr-2"))
        // Queued before play, so it follows however long the checks below take.
        _ = try await h.call("player.setNext", PlayerHarness.product("tr-3"))
        _ = try await h.call("player.play")
        seen = try await log.until {
            $0.type == "MediaProductTransition" && $0.data["activeMediaProduct"]?["productId"]?.stringValue == "tr-2"
        }
        transition = try XCTUnwrap(seen.last)
        XCTAssertEqual(transition.data["title"]?.stringValue, "Second Wind")
        XCTAssertEqual(transition.data["artist"]?.stringValue, "Cassette Demo Ensemble")
        XCTAssertEqual(transition.data["album"]?.stringValue, "Singles")
        XCTAssertNotNil(transition.data["durationSeconds"]?.doubleValue)
        context = transition.data["playbackContext"]
        XCTAssertEqual(context?["audioCodec"]?.stringValue, "aac")
        XCTAssertEqual(context?["audioSampleRate"]?.doubleValue, 44_100)
        XCTAssertGreaterThan(context?["audioBitRate"]?.doubleValue ?? 0, 0, "bit rate of the stream")
        XCTAssertEqual(context?["offline"]?.boolValue, false)
        seen = try await log.until(timeout: 20) {
            $0.type == "PlaybackQualityChanged" && $0.data["playbackContext"]?["productId"]?.stringValue == "tr-3"
        }
        let changed = try XCTUnwrap(seen.last)
        XCTAssertEqual(changed.data["playbackContext"]?["productId"]?.stringValue, "tr-3")
        XCTAssertEqual(changed.data["playbackContext"]?["audioSampleRate"]?.doubleValue, 48_000)
        XCTAssertEqual(changed.data["playbackContext"]?["audioCodec"]?.stringValue, "opus")
        status = try await h.status()
        XCTAssertEqual(status["title"]?.stringValue, "Third Rail")

        // A station item whose catalog row knows its title only: the format comes from the file.
        _ = try await h.call("station.tune", ["stationId": "st-x"])
        seen = try await log.until {
            $0.type == "MediaProductTransition" && $0.data["activeMediaProduct"]?["productId"]?.stringValue == "tr-s"
        }
        transition = try XCTUnwrap(seen.last)
        XCTAssertEqual(transition.data["title"]?.stringValue, "Station song")
        context = transition.data["playbackContext"]
        XCTAssertEqual(context?["audioCodec"]?.stringValue, "flac")
        XCTAssertEqual(context?["audioSampleRate"]?.doubleValue, 44_100)
        XCTAssertEqual(context?["audioBitDepth"]?.doubleValue, 16)
        XCTAssertGreaterThan(context?["audioBitRate"]?.doubleValue ?? 0, 0)
        _ = try await h.call("player.reset")
        await h.stop()
    }
}

extension PlayerHarness {
    /// An offline station of one item whose `mediaItems` row has a title and nothing else, as a
    /// station sync writes it (the origin's station items name no codec, rate or depth).
    func addBareStation(_ id: String, itemId: String, file relative: String) async throws {
        try await catalog.pool.write { db in
            try db.execute(
                sql: "INSERT INTO stations (id, name, expiresAt, createdAt) VALUES (?, ?, ?, ?)",
                arguments: [id, "Bare", Date().addingTimeInterval(86_400), Date()])
            try db.execute(
                sql: """
                    INSERT INTO files (urlPath, localPath, mimeType, state, createdAt, completedAt) VALUES (?, ?, 'audio/flac', 'verified', ?, ?)
                    """, arguments: ["/media/" + relative, relative, Date(), Date()])
            let fileId = db.lastInsertedRowID
            try db.execute(
                sql: "INSERT INTO mediaItems (id, title, fileId) VALUES (?, 'Station song', ?)",
                arguments: [itemId, fileId])
            try db.execute(
                sql: "INSERT INTO stationItems (stationId, itemId, position) VALUES (?, ?, 0)",
                arguments: [id, itemId])
        }
    }

    /// The body of the play event being written (the one open play), once there is one.
    func openPlayBody(timeout: Double = 10) async throws -> JSONValue {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let bodies = try await catalog.pool.read { db in
                try String.fetchAll(db, sql: "SELECT body FROM playerPlays WHERE state = 'open'")
            }
            if let body = bodies.last { return try JSONValue.parse(Array(body.utf8)) }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw HarnessError("no open play event within \(timeout) s")
    }
}
