import Foundation
import TestSupport
import Wire
import XCTest

/// TIDAL streaming privileges: while a stream plays the player holds a session at the origin; when
/// another device takes it over, the player pauses at its next heartbeat and says who took it.
/// Offline playback holds no session and plays on whatever other devices do.
final class StreamingPrivilegeTests: XCTestCase {
    func testAnotherDeviceTakingThePrivilegePausesAStreamButNotAnOfflineStation() async throws {
        // Heartbeats every second, so "within one heartbeat" is quick to wait for.
        let origin = try OriginProcess.start(arguments: ["--heartbeat-seconds", "1"])
        defer { origin.discard() }
        let api = OriginAPI(origin: origin)
        let h = try PlayerHarness()
        let long = try h.makeTrack("tr-long", seconds: 30)
        try h.addStation("st-local", name: "On the device", items: [("tr-long", long, "verified")])
        let client = try await h.start(
            pace: "realtime", config: #"{"player": {"deviceName": "Living room"}}"#,
            extraArgs: ["--origin", origin.baseURL],
            environment: ["CASSETTE_CLIENT_TOKEN": "demo", "CASSETTE_CLIENT_SECRET": "demo"])
        let log = EventLog(client)

        // A streaming station: a session is taken under this device's name.
        _ = try await h.call("station.tune", ["stationId": "st-2"])
        _ = try await log.untilState("PLAYING")
        var holder = try await waitForHolder(api) { $0 != nil }
        XCTAssertEqual(holder?["deviceName"] as? String, "Living room")

        let takenAt = Date()
        try await api.takeOverStreaming(deviceName: "Kitchen speaker")
        let events = try await log.until(timeout: 10) { $0.type == "StreamingPrivilegesRevoked" }
        let noticed = Date().timeIntervalSince(takenAt)
        let revoked = try XCTUnwrap(events.last)
        XCTAssertEqual(revoked.data["otherDevice"]?.stringValue, "Kitchen speaker")
        XCTAssertTrue(
            events.contains { $0.type == "PlaybackStateChanged" && $0.data["playbackState"]?.stringValue == "NOT_PLAYING" },
            "playback paused: \(events.map(EventLog.describe))")
        var status = try await h.status()
        XCTAssertEqual(status["playbackState"]?.stringValue, "NOT_PLAYING")
        print("privilege taken over: paused and reported after \(String(format: "%.2f", noticed)) s (heartbeat 1 s)")
        // Paused, the player does not take the privilege back: the other device keeps it.
        try await Task.sleep(for: .seconds(2))
        let kept = try await api.streaming()
        XCTAssertEqual((kept["holder"] as? [String: Any])?["deviceName"] as? String, "Kitchen speaker")
        XCTAssertEqual(kept.int("started"), 2, "the player's session and the other device's, no other")

        // An offline station holds no session: another takeover leaves it playing.
        _ = try await h.call("station.tune", ["stationId": "st-local"])
        _ = try await log.untilState("PLAYING")
        let startedBefore = try await api.streaming().int("started") ?? 0
        try await api.takeOverStreaming(deviceName: "Phone")
        holder = try await waitForHolder(api) { ($0?["deviceName"] as? String) == "Phone" }
        // Three heartbeat intervals: a held session would have heard 409 by now.
        try await Task.sleep(for: .seconds(3))
        status = try await h.status()
        XCTAssertEqual(status["playbackState"]?.stringValue, "PLAYING", "offline playback is never interrupted")
        XCTAssertEqual(status["mediaProduct"]?["productId"]?.stringValue, "tr-long")
        let after = try await api.streaming()
        XCTAssertEqual(after.int("started"), startedBefore + 1, "the player asked for no session for offline playback")
        XCTAssertEqual((after["holder"] as? [String: Any])?["deviceName"] as? String, "Phone")
        _ = try await h.call("player.reset")
        let rest = try await log.untilState("IDLE")
        XCTAssertFalse(rest.contains { $0.type == "StreamingPrivilegesRevoked" }, "\(rest.map(EventLog.describe))")
        await h.stop()
    }

    private func waitForHolder(_ api: OriginAPI, _ done: ([String: Any]?) -> Bool) async throws -> [String: Any]? {
        var holder = try await api.streaming()["holder"] as? [String: Any]
        for _ in 0..<200 where !done(holder) {
            try await Task.sleep(for: .milliseconds(50))
            holder = try await api.streaming()["holder"] as? [String: Any]
        }
        XCTAssertTrue(done(holder), "holder: \(String(describing: holder))")
        return holder
    }
}
