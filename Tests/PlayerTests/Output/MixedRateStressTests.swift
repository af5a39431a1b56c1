import Foundation
import TestSupport
import Wire
import XCTest

/// A station whose items change the sample rate at most borders (AAC 44.1 kHz, Opus 48 kHz),
/// skipped through quickly and then left to play to its end: every call is answered at once,
/// the station ends, and the transitions and plays add up.
final class MixedRateStressTests: XCTestCase {
    func testRapidSkipsThroughMixedRateStationThenPlaysToTheEnd() async throws {
        try await skipThroughMixedStation(cpus: nil)
    }

    /// The same with the player on one core: audio threads, engine and socket share it.
    func testRapidSkipsThroughMixedRateStationOnOneCore() async throws {
        try await skipThroughMixedStation(cpus: "0")
    }

    private static let itemCount = 36
    private static let skips = 28
    private static let itemSeconds = 0.6
    /// Pauses between skips, in milliseconds (50–200), used in turn.
    private static let pauses = [50, 120, 200, 80, 170, 60, 140, 100, 190, 70]

    private func skipThroughMixedStation(cpus: String?) async throws {
        let h = try PlayerHarness()
        // Formats in a pattern that makes both kinds of border: rate changes and same-rate ones.
        let formats: [EncodedFormat] = [.aac44, .opus48]
        let pattern = [0, 1, 1, 0]
        let sources = try formats.enumerated().map { index, format in
            try h.makeTrack("mx-source-\(index)", seconds: Self.itemSeconds, frequency: 440 + 220 * index, format: format)
        }
        let lengths = try formats.indices.map { try h.decodedSeconds(sources[$0], rate: formats[$0].sampleRate) }
        var items: [(String, String, String)] = []
        var kinds: [Int] = []
        for index in 0..<Self.itemCount {
            let kind = pattern[index % pattern.count]
            let file = "tracks/mx-\(index).\(formats[kind].ext)"
            try FileManager.default.copyItem(atPath: h.mediaDir + "/" + sources[kind], toPath: h.mediaDir + "/" + file)
            items.append((String(format: "mx-%02d", index), file, "verified"))
            kinds.append(kind)
        }
        try h.addStation("st-mx", name: "Mixed", items: items)
        for (item, kind) in zip(items, kinds) { try h.describe(item.0, format: formats[kind], seconds: Self.itemSeconds) }
        let ids = items.map(\.0)

        let client = try await h.start(pace: "realtime", cpus: cpus)
        let log = EventLog(client)
        var slowest = (method: "", seconds: 0.0)
        func timed(_ method: String, _ params: JSONValue = .object([:])) async throws -> JSONValue {
            let began = Date()
            let answer = try await h.call(method, params)
            let took = Date().timeIntervalSince(began)
            if took > slowest.seconds { slowest = (method, took) }
            return answer
        }

        _ = try await timed("station.tune", ["stationId": "st-mx"])
        // The first item is under way before the skips start: the first decoder of a player's
        // life also opens FFmpeg's libraries, and a skip before that ends would skip an item
        // that never became active (and never had its transition).
        let first = try await log.until { $0.type == "MediaProductTransition" }
        XCTAssertEqual(first.filter { $0.type == "MediaProductTransition" }.map(EventLog.describe), ["Transition:->mx-00"])
        for skip in 0..<Self.skips {
            try await Task.sleep(for: .milliseconds(Self.pauses[skip % Self.pauses.count]))
            _ = try await timed("station.skip")
            let status = try await timed("player.status")
            let index = status["activeStation"]?["index"]?.intValue ?? -1
            XCTAssertEqual(
                status["mediaProduct"]?["productId"]?.stringValue, ids.indices.contains(index) ? ids[index] : nil,
                "the active product is the station's current item")
        }
        let lastSkipped = try await timed("player.status")["activeStation"]?["index"]?.intValue ?? -1
        XCTAssertGreaterThanOrEqual(lastSkipped, Self.skips)
        guard ids.indices.contains(lastSkipped) else { return XCTFail("the station ended during the skips") }

        let events = first + (try await log.untilState("IDLE", timeout: 25))
        XCTAssertLessThan(slowest.seconds, 1, "every call answered within a second (slowest: \(slowest.method))")
        XCTAssertEqual(events.filter { $0.data["name"] != nil }.map(\.type), [], "no error")
        XCTAssertEqual(
            events.filter { $0.type == "PlaybackStateChanged" }.map(EventLog.describe),
            ["State:NOT_PLAYING", "State:PLAYING", "State:IDLE"])
        // Every item became active once, in station order, each from the one before it.
        let transitions = events.filter { $0.type == "MediaProductTransition" }.map(EventLog.describe)
        let chain = ["-"] + ids + ["-"]
        XCTAssertEqual(transitions, chain.indices.dropFirst().map { "Transition:\(chain[$0 - 1])>\(chain[$0])" })

        // Each play started was ended once; the items left to play out did so from start to end.
        let plays = try await h.storedPlays { plays in plays.allSatisfy { $0.state == "ready" } }
        XCTAssertEqual(plays.filter { $0.state != "ready" }.map(\.productId), [], "no play left open")
        XCTAssertEqual(
            plays.map(\.productId), ids.filter { id in plays.contains { $0.productId == id } },
            "at most one play per item, in station order")
        let lengthOf = Dictionary(uniqueKeysWithValues: zip(ids, kinds.map { lengths[$0] }))
        for play in plays {
            let length = lengthOf[play.productId] ?? 0
            XCTAssertGreaterThanOrEqual(play.startPosition, 0, play.productId)
            XCTAssertLessThanOrEqual(play.startPosition, play.endPosition, play.productId)
            XCTAssertLessThanOrEqual(play.endPosition, length + 0.001, play.productId)
        }
        for id in ids[lastSkipped...] {
            let play = plays.first { $0.productId == id }
            XCTAssertNotNil(play, "\(id) was played")
            XCTAssertEqual(play?.startPosition ?? -1, 0, accuracy: 0.001, "\(id) from its start")
            XCTAssertEqual(play?.endPosition ?? -1, lengthOf[id] ?? 0, accuracy: 0.002, "\(id) to its last frame")
        }
    }
}
