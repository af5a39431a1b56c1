import Foundation
import GRDB
import TestSupport
import Wire
import XCTest

@testable import StateDB

/// TIDAL Streaming Metrics and Progress events: each playback session's start, statistics,
/// progress and end are published on the player's socket and reach the origin's
/// `POST /v1/metrics` through the reporter exactly once, also when the reporter is killed
/// while it holds them and the origin's first answer is lost.
final class PlaybackMetricsTests: XCTestCase {
    let credentials = PlayerHarness.originCredentials

    func testMetricsAndProgressReachTheOriginOnceAcrossAReporterRestart() async throws {
        let origin = try OriginProcess.start()
        defer { origin.discard() }
        let api = OriginAPI(origin: origin)
        let h = try PlayerHarness()
        let file = try h.makeTrack("tr-a", seconds: 2)
        try h.addProduct("tr-a", file: file, seconds: 2)
        // The origin refuses metrics for now: the reporter keeps them.
        try await api.injectFaults("/v1/metrics", [["status": 503, "repeat": 10_000]])
        let config = #"{"player": {"playLogRetrySeconds": 0.2}, "reporter": {"retryInitialSeconds": 0.2, "retryMaxSeconds": 0.5}}"#
        let reporterConfig = try h.dir.writeConfig(config)
        var reporter = try ServiceProcess(
            "reporter", in: h.dir, extraArgs: ["--origin", origin.baseURL, "--config", reporterConfig],
            environment: credentials)
        defer { reporter.kill9() }
        try reporter.waitReady()

        let client = try await h.start(config: config)
        _ = try await client.call("events.subscribe", ["topics": ["metrics"]])
        let log = EventLog(client)
        let product: JSONValue = [
            "mediaProduct": [
                "productId": "tr-a", "productType": "TRACK", "referenceId": "ref-tr-a",
                "sourceType": "PLAYLIST", "sourceId": "pl-1",
            ]
        ]
        _ = try await h.call("player.load", product)
        _ = try await h.call("player.play")
        let events = try await log.until(timeout: 30) { $0.type == "StreamingSessionEnd" }
        let names = ["StreamingSessionStart", "PlaybackStatistics", "Progress", "StreamingSessionEnd"]
        let published = events.filter { names.contains($0.type) }
        XCTAssertEqual(published.map(\.type), names, "one of each, in order: \(events.map(EventLog.describe))")
        let sessionId = try XCTUnwrap(events.first { $0.type == "MediaProductTransition" }?.data["playbackContext"]?["playbackSessionId"]?.stringValue)
        for event in published {
            XCTAssertEqual(event.data["streamingSessionId"]?.stringValue, sessionId, "keyed by the playback session: \(event.data)")
            XCTAssertEqual(event.data["productId"]?.stringValue, "tr-a")
        }
        let statistics = try XCTUnwrap(published.first { $0.type == "PlaybackStatistics" }?.data["payload"])
        XCTAssertEqual(statistics["endReason"]?.stringValue, "COMPLETE", "\(statistics)")
        XCTAssertEqual(statistics["actualProductId"]?.stringValue, "tr-a")
        XCTAssertNotNil(statistics["actualStartTimestamp"]?.doubleValue, "the first frame was heard: \(statistics)")
        let progress = try XCTUnwrap(published.first { $0.type == "Progress" }?.data["payload"]?["playback"])
        XCTAssertEqual(progress["id"]?.stringValue, "tr-a")
        XCTAssertEqual(try XCTUnwrap(progress["playedMS"]?.doubleValue), 2000, accuracy: 50, "played to the end: \(progress)")
        XCTAssertEqual(progress["durationMS"]?.doubleValue, 2000)
        XCTAssertEqual(progress["source"]?["id"]?.stringValue, "pl-1")
        let ids = Set(published.compactMap { $0.data["eventId"]?.stringValue })
        XCTAssertEqual(ids.count, 4)

        // The reporter holds all four (the player let go of them), then is killed.
        var status: JSONValue = .null
        try await waitUntil("the reporter holds the four metric events", timeout: 30) {
            status = try await Self.call(reporter, "playlog.status")
            return status["metrics"]?["pending"]?.intValue == 4
        }
        reporter.kill9()
        let leftInPlayer = try await h.catalog.pool.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM playerPlays WHERE kind = 'metric'") ?? -1
        }
        XCTAssertEqual(leftInPlayer, 0, "handed over: the reporter has them")

        // The origin takes them again, but its first answer is lost: the reporter sends them twice.
        _ = try await api.delete("/_control/faults")
        try await api.injectFaults("/v1/metrics", [["commitThenReset": true]])
        reporter = try ServiceProcess(
            "reporter", in: h.dir, extraArgs: ["--origin", origin.baseURL, "--config", reporterConfig],
            environment: credentials)
        try reporter.waitReady()
        var metrics: [String: Any] = [:]
        try await waitUntil("the origin counted the four metric events", timeout: 30) {
            metrics = try await api.stats().object("metrics")
            if (metrics.int("unique") ?? 0) >= 4, (metrics.int("duplicates") ?? 0) >= 4 { return true }
            _ = try? await Self.call(reporter, "playlog.flush")
            return false
        }
        XCTAssertEqual(metrics.int("unique"), 4, "each counted once: \(metrics)")
        let lines = try String(contentsOf: origin.dataDirectory.appendingPathComponent("metrics.jsonl"), encoding: .utf8)
            .split(separator: "\n")
        XCTAssertEqual(lines.count, 4)
        let items = try lines.map { line in
            try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["item"] as? [String: Any])
        }
        XCTAssertEqual(Set(items.compactMap { $0["eventId"] as? String }), ids, "the events published are the events delivered")
        XCTAssertEqual(
            Set(items.compactMap { $0["name"] as? String }),
            ["streaming_session_start", "playback_statistics", "progress", "streaming_session_end"])
        XCTAssertEqual(Set(items.compactMap { $0["streamingSessionId"] as? String }), [sessionId])
        status = try await Self.call(reporter, "playlog.status")
        XCTAssertEqual(status["metrics"]?["pending"]?.intValue, 0, "\(status)")
        XCTAssertEqual(status["metrics"]?["delivered"]?.intValue, 4, "\(status)")
    }

    /// One call on a connection of its own.
    private static func call(_ service: ServiceProcess, _ method: String) async throws -> JSONValue {
        let client = try await service.client()
        do {
            let answer = try await client.call(method, .object([:]), timeout: .seconds(10))
            await client.close()
            return answer
        } catch {
            await client.close()
            throw error
        }
    }
}
