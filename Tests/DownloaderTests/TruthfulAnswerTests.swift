import Foundation
import GRDB
import TestSupport
import Wire
import XCTest

/// Answers that hold, over the socket against the real origin: `offline.estimate` says a
/// product can be downloaded exactly when `offline.add` takes it, unknown params are refused
/// naming them, and a download survives the origin's address changing.
final class TruthfulAnswerTests: XCTestCase {
    func testEstimateAndAddAgreeOnWhatCanBeDownloaded() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        try h.start()
        _ = try await h.call("network.set", ["type": "none"])
        // A manifest whose file lies on another host: refused by both (answered twice, once each).
        let foreign: [String: Any] = [
            "productId": "tr-3", "requestedProductId": "tr-3", "productType": "TRACK", "canBeDownloaded": true,
            "manifestType": "progressive",
            "manifest": [
                "url": "http://elsewhere.invalid/media/tr-3.flac", "sizeBytes": 1000,
                "sha256": String(repeating: "ab", count: 32), "mimeType": "audio/flac",
            ],
        ]
        try await h.api.injectFaults("/v1/playbackinfo/tr-3", [["body": foreign, "repeat": 2]])
        let products = ["tr-1", "tr-7", "tr-8", "tr-geo", "tr-sub", "vid-1", "tr-3", "no-such-product"]
        let estimate = try await h.call("offline.estimate", ["productIds": .array(products.map(JSONValue.string))])
        let items = try XCTUnwrap(estimate["items"]?.arrayValue)
        XCTAssertEqual(items.map { $0["productId"]?.stringValue }, products)
        var verdicts: [String: String] = [:]
        for (productId, item) in zip(products, items) {
            let estimated = try XCTUnwrap(item["canBeDownloaded"]?.boolValue, "\(item)")
            let added: Result<JSONValue, RPCError>
            do {
                added = .success(try await h.call("offline.add", ["productId": .string(productId)]))
            } catch let error as RPCError {
                added = .failure(error)
            }
            switch added {
            case .success(let status):
                XCTAssertTrue(estimated, "\(productId): estimate said no (\(item)), offline.add took it: \(status)")
                XCTAssertGreaterThan(item["sizeBytes"]?.intValue ?? 0, 0, "\(item)")
                XCTAssertEqual(item["sizeBytes"]?.intValue, status["sizeBytes"]?.intValue, "\(productId)")
                verdicts[productId] = "yes"
            case .failure(let error):
                XCTAssertFalse(estimated, "\(productId): estimate said yes, offline.add refused: \(error)")
                XCTAssertEqual(item["error"]?.stringValue, error.name, "\(productId): \(item) against \(error)")
                XCTAssertFalse(item["reason"]?.stringValue?.isEmpty ?? true, "\(item)")
                verdicts[productId] = error.name
            }
        }
        print("estimate and add agree: \(verdicts.sorted { $0.key < $1.key })")
        XCTAssertEqual(verdicts["tr-1"], "yes")
        XCTAssertEqual(verdicts["tr-7"], "yes")
        XCTAssertEqual(verdicts["tr-8"], "NotDownloadable")
        XCTAssertEqual(verdicts["tr-geo"], "ContentNotAvailableInLocation")
        XCTAssertEqual(verdicts["tr-sub"], "ContentNotAvailableForSubscription")
        XCTAssertEqual(verdicts["vid-1"], "yes", "an HLS presentation, sized as offline.add plans it")
        XCTAssertEqual(verdicts["tr-3"], "BadManifest")
        // Only what can be downloaded is counted.
        let counted = items.compactMap { $0["neededBytes"]?.intValue }.reduce(0, +)
        XCTAssertEqual(estimate["bytesNeeded"]?.intValue, counted)
        XCTAssertTrue(items.filter { $0["canBeDownloaded"]?.boolValue == false }.allSatisfy { $0["neededBytes"]?.intValue == 0 })
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
            ("offline.estimate", ["productIds": ["tr-1"], "subtitleLanguages": ["en"]], "params.subtitleLanguages"),
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

    /// Every running transfer reports its progress, however many run at once (one ticker follows
    /// them all): two products arriving slowly side by side each send `OfflineProgress` with
    /// their bytes growing, the catalog's `bytesOnDisk` follows, and both end cached.
    func testTransfersRunningTogetherEachReportTheirProgress() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        let client = try await h.client()
        _ = try await client.call("events.subscribe", ["topics": ["downloads"]])
        let events = EventCollector(client)
        try await h.api.injectFaults("/media/", [["bytesPerSecond": 40_000, "repeat": 2]])
        let tokens = [
            try PolicyTest.token(try await h.call("offline.add", ["productId": "tr-1"])),
            try PolicyTest.token(try await h.call("offline.add", ["productId": "tr-2"])),
        ]
        func reported(_ token: String) -> [Int] {
            events.of("OfflineProgress").filter { $0.data["token"]?.stringValue == token }.compactMap { $0.data["bytesOnDisk"]?.intValue }
        }
        for token in tokens {
            try await waitUntil("progress of \(token) reported twice", timeout: 30) { reported(token).count >= 2 }
            let onDisk = try await h.status(token)["bytesOnDisk"]?.intValue ?? 0
            XCTAssertGreaterThan(onDisk, 0, "the catalog follows \(token)")
        }
        for token in tokens {
            let cached = try await h.waitProduct(token, state: "cached", timeout: 60)
            let bytes = reported(token)
            XCTAssertEqual(bytes, bytes.sorted(), "\(token): bytes reported only grow")
            XCTAssertEqual(Set(bytes).count, bytes.count, "\(token): reported again without new bytes: \(bytes)")
            XCTAssertLessThanOrEqual(bytes.last ?? 0, cached["sizeBytes"]?.intValue ?? 0)
        }
        await client.close()
    }

    /// Files stored while the origin had one address are fetched from its new one: a product
    /// half downloaded when the downloader stopped resumes from its `.part` on the moved origin,
    /// as does one whose row still holds an absolute URL on the old address.
    func testADownloadSurvivesTheOriginsAddressChanging() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        try await h.api.injectFaults("/media/", [["bytesPerSecond": 20_000, "repeat": 2]])
        let first = try PolicyTest.token(try await h.call("offline.add", ["productId": "tr-1"]))
        let second = try PolicyTest.token(try await h.call("offline.add", ["productId": "tr-2"]))
        for token in [first, second] {
            try await waitUntil("part of \(token) on disk", timeout: 20) {
                (try await h.status(token)["bytesOnDisk"]?.intValue ?? 0) > 0
            }
        }
        h.kill9()
        let oldBase = h.origin.baseURL
        let pool = try h.catalogPool()
        let stored = try await pool.read { db in try String.fetchAll(db, sql: "SELECT url FROM files ORDER BY id") }
        XCTAssertEqual(stored.count, 4, "tr-1's file and its two images, tr-2's file: \(stored)")
        XCTAssertTrue(stored.allSatisfy { $0.hasPrefix("/") && !$0.contains("://") }, "stored URLs are not relative: \(stored)")
        // The second as an earlier version stored it: absolute, on the address about to go away.
        try await pool.write { db in
            try db.execute(
                sql: """
                    UPDATE files SET url = ? || url WHERE id = (SELECT m.fileId FROM mediaItems m JOIN offlineProducts p ON p.productId = m.id
                    WHERE p.token = ?)
                    """, arguments: [oldBase, second])
        }
        try pool.close()

        try h.moveOrigin()
        XCTAssertNotEqual(h.origin.baseURL, oldBase)
        try h.start()
        for token in [first, second] {
            let done = try await h.waitProduct(token, state: "cached", timeout: 60)
            XCTAssertEqual(done["error"], .null, "\(done)")
        }
        // Both resumed with Range from their `.part` on the new address.
        let (full, ranged) = try await h.mediaStats()
        XCTAssertEqual(ranged.values.reduce(0, +), 2, "full \(full), ranged \(ranged)")
        XCTAssertEqual(full.values.reduce(0, +), 0, "full \(full), ranged \(ranged)")
    }
}
