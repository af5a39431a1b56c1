import Foundation
import TestSupport
import Wire
import XCTest

/// Every method takes only the params it documents: any other key is -32602 `InvalidParams`
/// naming it, and nothing is done. The downloader's methods are covered with its own suite;
/// these are the player's, the reporter's and the ones every service answers.
final class UnknownParamsTests: XCTestCase {
    var dir: TestDirectory!

    override func setUpWithError() throws { dir = try TestDirectory() }
    override func tearDown() { dir?.remove() }

    func testPlayerRefusesParamsItDoesNotTake() async throws {
        let player = try ServiceProcess("player", in: dir, extraArgs: ["--audio-device", "null"])
        defer { player.kill9() }
        try player.waitReady()
        try await assertRefused(
            player,
            [
                ("player.load", ["mediaProduct": ["productId": "tr-1"], "autoplay": true], ["params.autoplay"]),
                ("player.setNext", ["mediaProducts": []], ["params.mediaProducts"]),
                ("player.seek", ["position": 3, "relative": true], ["params.relative"]),
                ("player.play", ["position": 3], ["params.position"]),
                ("player.status", ["verbose": true], ["params.verbose"]),
                ("station.tune", ["stationId": "st-9", "shuffle": true], ["params.shuffle"]),
                ("player.config.set", ["offlineMode": true, "loudnessMode": "TRACK"], ["params.loudnessMode"]),
                ("service.status", ["x": 1, "a": 2], ["params.a, params.x"]),
                ("events.subscribe", ["topics": ["player"], "since": 4], ["params.since"]),
                ("media.locate", ["productId": "tr-1", "format": "hls"], ["params.format"]),
                ("media.server.start", ["port": 8080], ["params.port"]),
            ])
        let client = try await player.client()
        defer { Task { await client.close() } }
        let config = try await client.call("player.config.get")
        XCTAssertEqual(config["offlineMode"]?.boolValue, false, "a refused player.config.set changed the config")
        _ = try await client.call("player.config.set", ["offlineMode": false])
        _ = try await client.call("player.status", [:])
        _ = try await client.call("events.subscribe", ["topics": ["player"]])
    }

    func testReporterRefusesParamsItDoesNotTake() async throws {
        let reporter = try ServiceProcess("reporter", in: dir)
        defer { reporter.kill9() }
        try reporter.waitReady()
        let event: JSONValue = [
            "eventId": "3f8e5a52-1c1e-4d3a-9a7e-4b8a6f0c2d11", "productId": "tr-1", "requestedProductId": "tr-1",
            "playbackSessionId": "s-1", "startedAt": "2026-11-24T10:00:00Z", "endedAt": "2026-11-24T10:01:00Z",
            "startPosition": 0, "endPosition": 60, "offline": true, "actions": [],
        ]
        try await assertRefused(
            reporter,
            [
                ("playlog.record", ["event": event, "durable": true], ["params.durable"]),
                ("playlog.status", ["all": true], ["params.all"]),
                ("playlog.flush", ["force": true], ["params.force"]),
                ("events.unsubscribe", ["topic": "playlog"], ["params.topic"]),
            ])
        let client = try await reporter.client()
        defer { Task { await client.close() } }
        let status = try await client.call("playlog.status")
        XCTAssertEqual(status["pending"]?.intValue, 0, "a refused playlog.record stored the event")
        let stored = try await client.call("playlog.record", ["event": event])
        XCTAssertEqual(stored["duplicate"]?.boolValue, false)
    }

    private func assertRefused(
        _ service: ServiceProcess, _ cases: [(String, JSONValue, [String])],
        file: StaticString = #filePath, line: UInt = #line
    ) async throws {
        let client = try await service.client()
        defer { Task { await client.close() } }
        for (method, params, fields) in cases {
            do {
                let answer = try await client.call(method, params)
                XCTFail("\(method) accepted \(params): \(answer)", file: file, line: line)
            } catch let error as RPCError {
                XCTAssertEqual(error.code, -32602, "\(method): \(error)", file: file, line: line)
                XCTAssertEqual(error.name, "InvalidParams", file: file, line: line)
                for field in fields {
                    XCTAssertTrue(error.message.contains(field), "\(method): \(error.message)", file: file, line: line)
                }
            }
        }
    }
}
