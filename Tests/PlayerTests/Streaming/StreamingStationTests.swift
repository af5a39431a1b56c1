import Foundation
import GRDB
import TestSupport
import Wire
import XCTest

@testable import StateDB

/// A streaming station (Feed.fm): its items come from the origin's play queue, asked again before
/// they run out, and play through the same engine as an offline station's — transitions, a skip,
/// play events carrying the station — with a streaming session held while they play and ended
/// once they stop; with the origin unreachable a station on the device plays instead.
final class StreamingStationTests: XCTestCase {
    static let credentials = ["CASSETTE_CLIENT_TOKEN": "demo", "CASSETTE_CLIENT_SECRET": "demo"]

    func testStreamingStationPlaysThreeItemsAndASkipWithPlayEvents() async throws {
        let origin = try OriginProcess.start()
        defer { origin.discard() }
        let api = OriginAPI(origin: origin)
        let h = try PlayerHarness()
        let client = try await h.start(pace: "realtime", extraArgs: ["--origin", origin.baseURL], environment: Self.credentials)
        let log = EventLog(client)

        let tuned = try await h.call("station.tune", ["stationId": "st-1"])
        XCTAssertEqual(tuned["streaming"]?.boolValue, true)
        XCTAssertEqual(tuned["stationId"]?.stringValue, "st-1")
        _ = try await log.untilState("PLAYING")
        let status = try await h.status()
        XCTAssertEqual(status["activeStation"]?["id"]?.stringValue, "st-1")
        XCTAssertEqual(status["activeStation"]?["streaming"]?.boolValue, true)
        XCTAssertEqual(status["title"]?.stringValue, "First Light", "the play queue's first item")

        // A skip during the first item (once it is heard), then two items that follow each other by themselves, into
        // a fourth that came from a second request of the queue.
        _ = try await h.openPlayBody()
        _ = try await h.call("station.skip")
        let events = try await log.until(timeout: 30) {
            $0.type == "MediaProductTransition" && $0.data["activeMediaProduct"]?["productId"]?.stringValue == "tr-7b"
        }
        let transitions = events.map(EventLog.describe).filter { $0.hasPrefix("Transition") }
        XCTAssertEqual(transitions, ["Transition:tr-1>tr-2", "Transition:tr-2>tr-3", "Transition:tr-3>tr-7b"])
        let third = try XCTUnwrap(events.first { $0.type == "MediaProductTransition" && $0.data["activeMediaProduct"]?["productId"]?.stringValue == "tr-3" })
        XCTAssertEqual(third.data["activeMediaProduct"]?["sourceType"]?.stringValue, "STATION")
        XCTAssertEqual(third.data["activeMediaProduct"]?["sourceId"]?.stringValue, "st-1")
        XCTAssertEqual(third.data["title"]?.stringValue, "Third Rail")
        XCTAssertEqual(third.data["playbackContext"]?["offline"]?.boolValue, false)
        XCTAssertEqual(third.data["playbackContext"]?["audioSampleRate"]?.doubleValue, 48_000)
        let streaming = try await api.streaming()
        XCTAssertNotNil(streaming["holder"] as? [String: Any], "a session is held while the station streams")

        _ = try await h.call("player.reset")
        _ = try await log.untilState("IDLE")
        // Play events: one per item heard, each carrying the station, streamed.
        // The last play is closed by the reset and written behind it: wait for it as long as the
        // other steps may take on a loaded machine.
        var closed: [JSONValue] = []
        let deadline = ContinuousClock.now + .seconds(30)
        repeat {
            closed = try await h.closedPlays()
            if closed.count >= 4 { break }
            try await Task.sleep(for: .milliseconds(50))
        } while ContinuousClock.now < deadline
        XCTAssertEqual(closed.map { $0["productId"]?.stringValue ?? "?" }, ["tr-1", "tr-2", "tr-3", "tr-7b"])
        for play in closed {
            XCTAssertEqual(play["stationId"]?.stringValue, "st-1")
            XCTAssertEqual(play["offline"]?.boolValue, false)
            XCTAssertEqual(play["sourceType"]?.stringValue, "STATION")
        }
        let heardOfSecond = (closed[1]["endPosition"]?.doubleValue ?? 0) - (closed[1]["startPosition"]?.doubleValue ?? 0)
        XCTAssertGreaterThan(heardOfSecond, 2, "tr-2 (2.6 s) was heard to its end: \(closed[1])")
        let asked = try await api.stats().object("requests").int("/v1/stations/st-1/play") ?? 0
        XCTAssertGreaterThanOrEqual(asked, 2, "the queue was asked again before it ran out")

        // Nothing streams any more: the session was ended.
        var holder: Any? = try await api.streaming()["holder"]
        for _ in 0..<100 where holder as? [String: Any] != nil {
            try await Task.sleep(for: .milliseconds(50))
            holder = try await api.streaming()["holder"]
        }
        XCTAssertNil(holder as? [String: Any], "the session is ended once nothing streams")
        let ended = try await api.streaming().int("ended")
        XCTAssertEqual(ended, 1)
        await h.stop()
    }

    func testUnreachableOriginFallsBackToAStationOnTheDevice() async throws {
        let h = try PlayerHarness()
        let one = try h.makeTrack("tr-9-01", seconds: 2)
        // The first reachability check at start finds the origin unreachable; the tune then tries
        // once and falls back at once.
        try h.addStation("st-9", name: "Focus", items: [("tr-9-01", one, "verified")])
        // Port 9 on loopback: nothing listens, the origin is unreachable at once.
        let client = try await h.start(pace: "realtime", extraArgs: ["--origin", "http://127.0.0.1:9"], environment: Self.credentials)
        let log = EventLog(client)
        var availability = ""
        for _ in 0..<100 where availability != "OFFLINE_ONLY" {
            availability = try await h.status()["availability"]?.stringValue ?? ""
            try await Task.sleep(for: .milliseconds(50))
        }
        let tuned = try await h.call("station.tune", ["stationId": "st-1"])
        XCTAssertEqual(tuned["fallback"]?.boolValue, true)
        XCTAssertEqual(tuned["stationId"]?.stringValue, "st-9")
        XCTAssertEqual(tuned["streaming"]?.boolValue, false)
        _ = try await log.untilState("PLAYING")
        let status = try await h.status()
        XCTAssertEqual(status["activeStation"]?["id"]?.stringValue, "st-9")
        XCTAssertEqual(status["availability"]?.stringValue, "OFFLINE_ONLY")
        _ = try await h.call("player.reset")
        await h.stop()
    }
}

extension PlayerHarness {
    /// The closed play events in `playerPlays` (none reached a reporter), in the order they were written.
    func closedPlays() async throws -> [JSONValue] {
        let bodies = try await catalog.pool.read { db in
            try String.fetchAll(db, sql: "SELECT body FROM playerPlays WHERE kind = 'play' AND state = 'ready' ORDER BY rowid")
        }
        return try bodies.map { try JSONValue.parse(Array($0.utf8)) }
    }
}
