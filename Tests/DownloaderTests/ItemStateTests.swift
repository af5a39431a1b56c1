import Foundation
import GRDB
import Synchronization
import TestSupport
import Wire
import XCTest

/// Item states that say what is happening, over the socket against the real origin: a failing
/// origin (`NetworkError`, resumed by itself, no attempts burnt), a failed station item retried
/// by the next sync, a metered link (`MeteredNotAllowed`), wrong credentials (`Unauthorized`),
/// and unknown params refused.
final class ItemStateTests: XCTestCase {
    /// Every event of one subscribed connection, kept for the test to look through.
    final class EventLog: Sendable {
        private final class Box: Sendable { let events = Mutex<[RPCEvent]>([]) }
        private let seen = Box()
        private let reader: Task<Void, Never>
        let client: RPCClient

        init(_ h: DownloaderHarness) async throws {
            client = try await h.client()
            _ = try await client.call("events.subscribe", ["topics": ["downloads"]])
            let box = seen
            let stream = client.events
            reader = Task { for await event in stream { box.events.withLock { $0.append(event) } } }
        }

        func all(_ type: String) -> [JSONValue] { seen.events.withLock { $0.filter { $0.type == type }.map(\.data) } }

        deinit { reader.cancel() }
    }

    func testAFailingOriginLeavesItemsIdleWithNetworkErrorAndTheyResumeByThemselves() async throws {
        // One attempt only: were network failures counted, the first would fail the item for good.
        let h = try DownloaderHarness(config: #"{"downloader":{"maxAttempts":1}}"#)
        defer { h.discard() }
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        let log = try await EventLog(h)
        try await h.api.injectFaults("/media/", [["status": 503, "repeat": 100_000]])

        let token = try PolicyTest.token(try await h.call("offline.add", ["productId": "tr-1"]))
        _ = try await h.call("stations.sync", ["stationId": "st-11"])
        let idle = try await h.waitProduct(token, state: "idle", timeout: 20)
        XCTAssertEqual(idle["error"]?.stringValue, "NetworkError")
        XCTAssertTrue(idle["reason"]?.stringValue?.contains("503") ?? false, "\(idle)")
        try await PolicyTest.waitUntil("a station item idle with NetworkError", timeout: 20) {
            log.all("ItemStateChanged").contains { $0["stationId"]?.stringValue == "st-11" && $0["state"]?.stringValue == "idle"
                && $0["error"]?.stringValue == "NetworkError" && $0["reason"]?.stringValue != nil }
        }
        XCTAssertTrue(log.all("ItemStateChanged").contains { $0["token"]?.stringValue == token && $0["state"]?.stringValue == "idle"
            && $0["error"]?.stringValue == "NetworkError" })

        // Several rounds of failures later it still waits: no attempt was counted.
        try await Task.sleep(nanoseconds: 8_000_000_000)
        let still = try await h.status(token)
        XCTAssertEqual(still["state"]?.stringValue, "idle", "\(still)")
        XCTAssertEqual(still["error"]?.stringValue, "NetworkError")
        XCTAssertTrue(log.all("OfflineFailed").isEmpty, "\(log.all("OfflineFailed"))")
        let counted = try await h.catalogPool().read { db in try Int.fetchOne(db, sql: "SELECT MAX(attempts) FROM files") }
        XCTAssertEqual(counted, 0, "a failing origin counted attempts")

        // The origin answers again: everything completes by itself.
        _ = try await h.api.delete("/_control/faults")
        let done = try await h.waitProduct(token, state: "cached", timeout: 60)
        XCTAssertEqual(done["error"], .null)
        try await h.waitStationComplete("st-11", timeout: 60)
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
        let log = try await EventLog(h)
        func stationRequest() async throws -> (state: String?, attempts: Int?) {
            try await h.catalogPool().read { db in
                let row = try Row.fetchOne(db, sql: """
                    SELECT d.state, f.attempts FROM downloads d JOIN files f ON f.id = d.fileId
                    WHERE f.urlPath = ? AND d.ownerKind = 'station'
                    """, arguments: [path])
                return (row?["state"], row?["attempts"])
            }
        }
        _ = try await h.call("stations.sync", ["stationId": "st-11"])
        try await PolicyTest.waitUntil("the item failed", timeout: 30) { try await stationRequest().state == "failed" }
        let firstAttempts = try await stationRequest().attempts
        XCTAssertEqual(firstAttempts, 1)

        // The next sync queues it again (attempts reset); the origin refuses it once more.
        let again = try await h.call("stations.sync", ["stationId": "st-11"])
        XCTAssertEqual(again["failed"]?.intValue, 0, "\(again)")
        XCTAssertTrue(log.all("ItemStateChanged").contains { $0["itemId"]?.stringValue == item && $0["state"]?.stringValue == "queued" },
                      "\(log.all("ItemStateChanged"))")
        try await PolicyTest.waitUntil("the item failed again", timeout: 30) { try await stationRequest().state == "failed" }

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
        let before = try await h.call("service.status")
        XCTAssertEqual(before["originAuth"]?.stringValue, "unknown")
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

    func testUnknownParamsAreRefusedAndDocumentedOnesAccepted() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        try h.start()
        _ = try await h.call("network.set", ["type": "none"])
        let refused: [(String, JSONValue, String)] = [
            ("offline.add", ["productId": "tr-1", "bitrate": 320], "params.bitrate"),
            ("offline.add", ["productId": "tr-1", "subtitleLanguages": ["en"]], "params.subtitleLanguages"),
            ("offline.estimate", ["productId": "tr-1", "bitrate": 320], "params.bitrate"),
            ("stations.sync", ["stationId": "st-11", "target": 30], "params.target"),
            ("offline.status", ["token": "x", "verbose": true], "params.verbose"),
            ("stations.list", ["all": true], "params.all"),
            ("network.set", ["type": "wifi", "metred": true], "params.metred"),
        ]
        for (method, params, field) in refused {
            do {
                _ = try await h.call(method, params)
                XCTFail("\(method) accepted \(params)")
            } catch let error as RPCError {
                XCTAssertEqual(error.code, -32602, "\(method): \(error)")
                XCTAssertEqual(error.name, "InvalidParams")
                XCTAssertTrue(error.message.contains(field), "\(method): \(error.message)")
            }
        }
        let stored = try await h.call("offline.list")
        XCTAssertEqual(stored["items"]?.arrayValue?.count, 0, "a refused offline.add stored something")
        let added = try await h.call("offline.add", ["productId": "tr-1", "productType": "TRACK", "quality": "LOW", "allowCellular": false])
        XCTAssertEqual(added["quality"]?.stringValue, "LOW")
        _ = try await h.call("offline.list", ["filter": "idle", "sort": "-requestedAt"])
        _ = try await h.call("stations.list", [:])
    }
}
