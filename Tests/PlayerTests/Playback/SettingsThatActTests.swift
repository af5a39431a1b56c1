import Foundation
import TestSupport
import Wire
import XCTest

/// The player's settings act where they should: a stream is asked at the cellular quality while
/// the downloader sees a cellular link, and the app's offline mode stops the downloader's own
/// traffic to the origin (counted at the origin), until it is switched off again; `availability`
/// follows the origin going away and coming back.
final class SettingsThatActTests: XCTestCase {
    static let credentials = PlayerHarness.originCredentials

    func testCellularStreamingAsksTheCellularQuality() async throws {
        let origin = try OriginProcess.start()
        defer { origin.discard() }
        let api = OriginAPI(origin: origin)
        let h = try PlayerHarness()
        let downloader = try h.startDownloader(origin: origin)
        defer { downloader.kill9() }
        let manage = try await downloader.client()
        let client = try await h.start(pace: "realtime", extraArgs: ["--origin", origin.baseURL], environment: Self.credentials)
        let log = EventLog(client)
        _ = try await h.call("player.config.set", ["streamingQualityWifi": "LOSSLESS", "streamingQualityCellular": "LOW"])

        _ = try await manage.call("network.set", ["type": "cellular"])
        _ = try await h.call("player.load", PlayerHarness.product("tr-2"))
        _ = try await log.until { $0.type == "MediaProductTransition" }
        var asked = try await api.stats().object("playbackInfoQualities")
        XCTAssertEqual(asked.int("stream:LOW"), 1, "cellular: the cellular quality was asked: \(asked)")
        XCTAssertNil(asked.int("stream:LOSSLESS"), "\(asked)")

        _ = try await manage.call("network.set", ["type": "wifi"])
        _ = try await h.call("player.load", PlayerHarness.product("tr-3"))
        _ = try await log.until { $0.type == "MediaProductTransition" && $0.data["activeMediaProduct"]?["productId"]?.stringValue == "tr-3" }
        asked = try await api.stats().object("playbackInfoQualities")
        XCTAssertEqual(asked.int("stream:LOSSLESS"), 1, "Wi-Fi: the Wi-Fi quality was asked: \(asked)")
        XCTAssertEqual(asked.int("stream:LOW"), 1)
        _ = try await h.call("player.reset")
        await manage.close()
        await h.stop()
    }

    func testOfflineModeMakesTheDownloaderSendNothing() async throws {
        let origin = try OriginProcess.start()
        defer { origin.discard() }
        let api = OriginAPI(origin: origin)
        let h = try PlayerHarness()
        let downloader = try h.startDownloader(origin: origin)
        defer { downloader.kill9() }
        let manage = try await downloader.client()
        _ = try await manage.call("network.set", ["type": "wifi"])
        // The player's own reachability check (not the downloader's traffic) is kept out of the count.
        _ = try await h.start(
            config: #"{"player": {"availabilityCheckSeconds": 3600}}"#,
            extraArgs: ["--origin", origin.baseURL], environment: Self.credentials)

        // A station downloading slowly: its files trickle in at 20 kB/s.
        try await api.injectFaults("/media/", [["bytesPerSecond": 20_000, "repeat": 1000]])
        _ = try await manage.call("stations.sync", ["stationId": "st-9"])
        try await waitUntil("a media file requested") {
            (try await api.stats().object("requests").keys.contains { $0.hasPrefix("/media/") })
        }

        // Offline mode, set on the player, reaches the downloader, which stops its transfers.
        _ = try await h.call("player.config.set", ["offlineMode": true])
        let policy = try await manage.call("policy.get")
        XCTAssertEqual(policy["offlineMode"]?.boolValue, true)
        XCTAssertEqual(policy["downloads"]?.stringValue, "none")
        _ = try await api.post("/_control/reset", [String: Any](), authorized: false)
        // The downloader's background loops wake every few seconds: wait past two of them.
        try await Task.sleep(for: .seconds(6))
        // What the app asks of the downloader that needs the origin answers so, sending nothing.
        for (method, params) in [("stations.sync", ["stationId": "st-10"]), ("offline.add", ["productId": "tr-2"])] as [(String, JSONValue)] {
            do {
                _ = try await manage.call(method, params)
                XCTFail("\(method) in offline mode")
            } catch let error as RPCError {
                XCTAssertEqual(error.name, "OfflineMode", "\(method): \(error)")
                XCTAssertEqual(error.code, 1012)
            }
        }
        let sent = try await api.stats().object("requests")
        XCTAssertTrue(sent.isEmpty, "nothing reached the origin in offline mode: \(sent)")

        // Back online: the station's downloads go on by themselves.
        _ = try await h.call("player.config.set", ["offlineMode": false])
        try await waitUntil("downloads resumed") {
            (try await api.stats().object("requests").keys.contains { $0.hasPrefix("/media/") })
        }
        await manage.close()
        await h.stop()
    }

    func testAvailabilityFollowsTheOriginGoingAwayAndComingBack() async throws {
        let origin = try OriginProcess.start()
        defer { origin.discard() }
        let api = OriginAPI(origin: origin)
        let h = try PlayerHarness()
        let client = try await h.start(
            config: #"{"player": {"availabilityCheckSeconds": 0.5}}"#,
            extraArgs: ["--origin", origin.baseURL], environment: Self.credentials)
        let log = EventLog(client)
        try await waitUntil("AVAILABLE") { try await h.status()["availability"]?.stringValue == "AVAILABLE" }
        // The origin goes away: every connection to it is cut.
        try await api.injectFaults("/v1/", [["reset": true, "repeat": 100_000]])
        _ = try await log.until { $0.type == "NotAvailable" }
        var availability = try await h.status()["availability"]?.stringValue
        XCTAssertEqual(availability, "NOT_AVAILABLE")
        // … and comes back.
        let cleared = try await api.delete("/_control/faults")
        XCTAssertEqual(cleared.status, 200)
        _ = try await log.until { $0.type == "Available" }
        availability = try await h.status()["availability"]?.stringValue
        XCTAssertEqual(availability, "AVAILABLE")
        // Offline mode: the origin is not asked, only what the device holds counts (nothing here).
        _ = try await h.call("player.config.set", ["offlineMode": true])
        _ = try await log.until { $0.type == "NotAvailable" }
        _ = try await api.post("/_control/reset", [String: Any](), authorized: false)
        try await Task.sleep(for: .seconds(1.5))
        let asked = try await api.stats().object("requests").int("/v1/stations") ?? 0
        XCTAssertEqual(asked, 0, "no reachability check in offline mode")
        _ = try await h.call("player.config.set", ["offlineMode": false])
        _ = try await log.until { $0.type == "Available" }
        await h.stop()
    }
}
