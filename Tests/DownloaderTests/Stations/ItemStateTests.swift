import Foundation
import GRDB
import TestSupport
import Wire
import XCTest

/// Item states that say what is happening, over the socket against the real origin: a failing
/// or unreachable origin (`NetworkError`, resumed by itself, no attempts burnt), a failed station
/// item retried by the next sync and at start, a metered link (`MeteredNotAllowed`) and wrong
/// credentials (`Unauthorized`).
final class ItemStateTests: XCTestCase {
    /// A connection subscribed to `downloads`, and every event it receives.
    private func downloadEvents(_ h: DownloaderHarness) async throws -> (RPCClient, EventCollector) {
        let client = try await h.client()
        let events = EventCollector(client)
        _ = try await client.call("events.subscribe", ["topics": ["downloads"]])
        return (client, events)
    }

    func testAFailingOriginLeavesItemsIdleWithNetworkErrorAndTheyResumeByThemselves() async throws {
        // One attempt only: were network failures counted, the first would fail the item for good.
        let h = try DownloaderHarness(config: #"{"downloader":{"maxAttempts":1}}"#)
        defer { h.discard() }
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        let (client, events) = try await downloadEvents(h)
        defer { Task { await client.close() } }
        try await h.api.injectFaults("/media/", [["status": 503, "repeat": 100_000]])

        let token = try PolicyTest.token(try await h.call("offline.add", ["productId": "tr-1"]))
        _ = try await h.call("stations.sync", ["stationId": "st-11"])
        let idle = try await h.waitProduct(token, state: "idle", timeout: 20)
        XCTAssertEqual(idle["error"]?.stringValue, "NetworkError")
        XCTAssertTrue(idle["reason"]?.stringValue?.contains("503") ?? false, "\(idle)")
        try await events.wait("a station item idle with NetworkError", timeout: 20) {
            $0.type == "ItemStateChanged" && $0.data["stationId"]?.stringValue == "st-11" && $0.data["state"]?.stringValue == "idle"
                && $0.data["error"]?.stringValue == "NetworkError" && $0.data["reason"]?.stringValue != nil
        }
        let idleAt = try await events.waitPosition("the product idle with NetworkError", timeout: 5) {
            $0.type == "ItemStateChanged" && $0.data["token"]?.stringValue == token && $0.data["state"]?.stringValue == "idle"
                && $0.data["error"]?.stringValue == "NetworkError"
        }

        // Several rounds of retries later it still waits, and said nothing else meanwhile: a
        // probe of a failing origin is not a download, and no attempt was counted.
        try await Task.sleep(nanoseconds: 8_000_000_000)
        let still = try await h.status(token)
        XCTAssertEqual(still["state"]?.stringValue, "idle", "\(still)")
        XCTAssertEqual(still["error"]?.stringValue, "NetworkError")
        let meanwhile = events.all[(idleAt + 1)...].filter { $0.type == "ItemStateChanged" && $0.data["token"]?.stringValue == token }
        XCTAssertEqual(meanwhile.count, 0, "the item changed state while the origin failed: \(meanwhile.map(\.data))")
        XCTAssertTrue(events.of("OfflineFailed").isEmpty, "\(events.of("OfflineFailed").map(\.data))")
        let counted = try await h.catalogPool().read { db in try Int.fetchOne(db, sql: "SELECT MAX(attempts) FROM files") }
        XCTAssertEqual(counted, 0, "a failing origin counted attempts")
        print("failing origin: idle \(still["reason"]?.stringValue ?? "?")")

        // The origin answers again: everything completes by itself.
        _ = try await h.api.delete("/_control/faults")
        let done = try await h.waitProduct(token, state: "cached", timeout: 60)
        XCTAssertEqual(done["error"], .null)
        try await h.waitStationComplete("st-11", timeout: 60)

        // An origin that cannot be reached at all (every connection reset) is the same wait.
        try await h.api.injectFaults("/media/", [["reset": true, "repeat": 100_000]])
        let other = try PolicyTest.token(try await h.call("offline.add", ["productId": "tr-2"]))
        let unreachable = try await h.waitProduct(other, state: "idle", timeout: 20)
        XCTAssertEqual(unreachable["error"]?.stringValue, "NetworkError", "\(unreachable)")
        XCTAssertFalse(unreachable["reason"]?.stringValue?.isEmpty ?? true, "\(unreachable)")
        print("unreachable origin: idle \(unreachable["reason"]?.stringValue ?? "?")")
        _ = try await h.api.delete("/_control/faults")
        _ = try await h.waitProduct(other, state: "cached", timeout: 60)
    }

    /// A product of many files (vid-1's segments) while its origin fails: one event into `idle`
    /// and nothing more while the origin keeps failing, though each of its files is tried in
    /// turn; once the origin answers, one event out (`downloading`, as bytes flow), then `cached`.
    func testAManyFileProductStaysIdleWithoutFlappingWhileTheOriginFails() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        let (client, events) = try await downloadEvents(h)
        defer { Task { await client.close() } }
        // offline.add reads the playlists while the origin answers; no file is downloaded yet (no
        // network), then the origin fails, and the network comes back to meet the outage.
        _ = try await h.call("network.set", ["type": "none"])
        let token = try PolicyTest.token(try await h.call("offline.add", ["productId": "vid-1", "productType": "VIDEO"]))
        try await h.api.injectFaults("/media/", [["status": 503, "repeat": 100_000]])
        try await h.api.injectFaults("/img/", [["status": 503, "repeat": 100_000]])
        _ = try await h.call("network.set", ["type": "wifi"])
        let idleAt = try await events.waitPosition("vid-1 idle with NetworkError", timeout: 30) {
            $0.type == "ItemStateChanged" && $0.data["token"]?.stringValue == token && $0.data["state"]?.stringValue == "idle"
                && $0.data["error"]?.stringValue == "NetworkError"
        }
        try await Task.sleep(nanoseconds: 12_000_000_000)
        let mine = { (e: RPCEvent) in e.data["token"]?.stringValue == token && ["ItemStateChanged", "OfflineStarted"].contains(e.type) }
        let meanwhile = events.all[(idleAt + 1)...].filter(mine)
        XCTAssertEqual(meanwhile.count, 0, "vid-1 changed state while the origin failed: \(meanwhile.map { "\($0.type) \($0.data)" })")
        let tried = try await h.api.stats().object("requests").keys.filter { $0.hasPrefix("/media/vid-1/") && $0.contains("/seg") }.count
        XCTAssertGreaterThan(tried, 1, "several of its files were tried meanwhile")

        let recoveredAt = events.all.count
        _ = try await h.api.delete("/_control/faults")
        _ = try await h.waitProduct(token, state: "cached", timeout: 90)
        let after = events.all[recoveredAt...].filter { $0.type == "ItemStateChanged" && mine($0) }.map { $0.data["state"]?.stringValue ?? "?" }
        XCTAssertEqual(after, ["downloading", "cached"], "one event out of idle as bytes flow, then cached")
    }

    func testAFailedStationItemIsRetriedByTheNextSyncAndAtStart() async throws {
        let h = try DownloaderHarness(config: #"{"downloader":{"maxAttempts":1}}"#)
        defer { h.discard() }
        let manifest = try await h.manifest("st-11")
        let (item, file) = try XCTUnwrap(manifest.min { $0.key < $1.key })
        let path = URL(string: file.url)?.path ?? file.url
        // A refusal of the file (404) counts: with one attempt the item fails for good.
        try await h.api.injectFaults(path, [["status": 404, "repeat": 2]])
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        let (client, events) = try await downloadEvents(h)
        defer { Task { await client.close() } }
        func stationRequest() async throws -> (state: String?, attempts: Int?) {
            try await h.catalogPool().read { db in
                let row = try Row.fetchOne(
                    db,
                    sql: """
                        SELECT d.state, f.attempts FROM downloads d JOIN files f ON f.id = d.fileId
                        WHERE f.urlPath = ? AND d.ownerKind = 'station'
                        """, arguments: [path])
                return (row?["state"], row?["attempts"])
            }
        }
        _ = try await h.call("stations.sync", ["stationId": "st-11"])
        try await waitUntil("the item failed", timeout: 30) { try await stationRequest().state == "failed" }
        let firstAttempts = try await stationRequest().attempts
        XCTAssertEqual(firstAttempts, 1)
        // The item that failed for good says so, and the sync completes once, not once per path
        // (the failure and the last verified file) that finds nothing pending.
        try await events.wait("the station item's failed event", timeout: 10) {
            $0.type == "ItemStateChanged" && $0.data["stationId"]?.stringValue == "st-11" && $0.data["itemId"]?.stringValue == item
                && $0.data["state"]?.stringValue == "failed" && $0.data["error"]?.stringValue == "DownloadFailed"
        }
        try await events.wait("st-11 complete", timeout: 60) {
            $0.type == "StationDownloadComplete" && $0.data["stationId"]?.stringValue == "st-11"
        }
        try await Task.sleep(nanoseconds: 2_000_000_000)
        let completions = events.of("StationDownloadComplete").filter { $0.data["stationId"]?.stringValue == "st-11" }
        XCTAssertEqual(completions.count, 1, "\(completions.map(\.data))")

        // The next sync queues it again (attempts reset); the origin refuses it once more.
        let again = try await h.call("stations.sync", ["stationId": "st-11"])
        XCTAssertEqual(again["failed"]?.intValue, 0, "\(again)")
        try await events.wait("the failed item queued again", timeout: 5) {
            $0.type == "ItemStateChanged" && $0.data["itemId"]?.stringValue == item && $0.data["state"]?.stringValue == "queued"
        }
        try await waitUntil("the item failed again", timeout: 30) { try await stationRequest().state == "failed" }

        // A restart queues it again; the origin now serves it.
        try h.stop()
        try h.start()
        try await h.waitStationComplete("st-11", timeout: 60)
        let synced = try await h.call("stations.sync", ["stationId": "st-11"])
        XCTAssertEqual(synced["failed"]?.intValue, 0, "\(synced)")
        XCTAssertEqual(synced["pending"]?.intValue, 0, "\(synced)")
    }

    func testAMeteredLinkIsReportedAsMetered() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        try h.start()
        let network = try await h.call("network.set", ["type": "wifi", "metered": true])
        XCTAssertEqual(network["downloads"]?.stringValue, "allowCellularItemsOnly")
        XCTAssertEqual(network["block"]?.stringValue, "MeteredNotAllowed")
        let token = try PolicyTest.token(try await h.call("offline.add", ["productId": "tr-2"]))
        let waiting = try await h.waitProduct(token, state: "idle", timeout: 10)
        XCTAssertEqual(waiting["error"]?.stringValue, "MeteredNotAllowed")
        _ = try await h.call("policy.set", ["allowMetered": true])
        _ = try await h.waitProduct(token, state: "cached", timeout: 30)
    }

    func testWrongCredentialsAreNamedOnCallsItemsAndStatus() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        // The offline extension every start sends is answered: the credentials are accepted (and
        // no request made before the faults below is still on its way).
        try await waitUntil("originAuth accepted", timeout: 20) {
            try await h.call("service.status")["originAuth"]?.stringValue == "accepted"
        }
        try await h.api.injectFaults("/v1/", [["status": 401, "subStatus": 6001, "repeat": 1000]])
        do {
            _ = try await h.call("stations.sync", ["stationId": "st-11"])
            XCTFail("a refused sync succeeded")
        } catch let error as RPCError {
            XCTAssertEqual(error.name, "Unauthorized")
            XCTAssertEqual(error.code, 4401)
        }
        let status = try await h.call("service.status")
        XCTAssertEqual(status["originAuth"]?.stringValue, "refused")
        XCTAssertEqual(status["originAuthError"]?["name"]?.stringValue, "Unauthorized")
        let list = try await h.call("stations.list")
        XCTAssertEqual(list["available"]?.boolValue, false)
        XCTAssertEqual(list["error"]?.stringValue, "Unauthorized")

        // A media server that refuses the credentials: the item waits, named, and is not failed.
        _ = try await h.api.delete("/_control/faults")
        try await h.api.injectFaults("/media/", [["status": 401, "subStatus": 6001, "repeat": 1000]])
        let token = try PolicyTest.token(try await h.call("offline.add", ["productId": "tr-3"]))
        let idle = try await h.waitProduct(token, state: "idle", timeout: 20)
        XCTAssertEqual(idle["error"]?.stringValue, "Unauthorized")
        let afterAdd = try await h.call("service.status")
        XCTAssertEqual(afterAdd["originAuth"]?.stringValue, "accepted")
        _ = try await h.api.delete("/_control/faults")
        _ = try await h.waitProduct(token, state: "cached", timeout: 60)
    }
}
