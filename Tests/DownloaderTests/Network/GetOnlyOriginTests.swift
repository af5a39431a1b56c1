import Foundation
import GRDB
import HTTPClient
import TestSupport
import Wire
import XCTest

/// An edge whose signed URLs are valid for `GET` only, as the reference origin plays it with
/// `/_control/head` (every `HEAD` of a media file, image or key answered 403): HLS products (a
/// video and an audio presentation) and a progressive product with images are estimated and
/// offlined to `cached` without one `HEAD`, sizes learned from the `GET`s; progress moves by
/// files until they are; and a product whose real sizes outgrow the estimate the cache was
/// admitted with still stops with `CacheLimit` and completes intact once there is room.
final class GetOnlyOriginTests: XCTestCase {
    private func refuseHead(_ h: DownloaderHarness) async throws {
        let response = try await h.api.post("/_control/head", ["status": 403], authorized: false)
        XCTAssertEqual(response.status, 200, String(decoding: response.body, as: UTF8.self))
    }

    /// Requests the origin answered, by method.
    private func methods(_ h: DownloaderHarness) async throws -> [String: Int] {
        try await h.api.stats().object("methods").compactMapValues { ($0 as? NSNumber)?.intValue }
    }

    func testProductsAreEstimatedAndOfflinedWithoutAnyHead() async throws {
        let h = try DownloaderHarness(config: #"{"downloader":{"maxParallel":1}}"#)
        defer { h.discard() }
        try await refuseHead(h)
        let head = try await h.api.anonymous.send(HTTPRequest(method: "HEAD", url: h.origin.baseURL + "/media/vid-1/master.m3u8"))
        XCTAssertEqual(head.status, 403, "the origin refuses HEAD now")
        let before = try await methods(h)
        XCTAssertEqual(before["HEAD"], 1)

        try h.start()
        _ = try await h.call("network.set", ["type": "none"])
        let products = ["vid-1", "tr-hls", "tr-1"]
        let estimate = try await h.call("offline.estimate", ["productIds": .array(products.map(JSONValue.string))])
        let estimated = try XCTUnwrap(estimate["items"]?.arrayValue)
        var tokens: [String] = []
        for (productId, item) in zip(products, estimated) {
            XCTAssertEqual(item["canBeDownloaded"]?.boolValue, true, "\(productId): \(item)")
            XCTAssertEqual(item["sizeKnown"]?.boolValue, false, "\(productId): segments and images are sized by their GET: \(item)")
            XCTAssertGreaterThan(item["sizeBytes"]?.intValue ?? 0, 0, "\(productId): \(item)")
            let added = try await h.call("offline.add", ["productId": .string(productId)])
            XCTAssertEqual(added["sizeKnown"]?.boolValue, false, "\(added)")
            XCTAssertEqual(added["sizeBytes"], item["sizeBytes"], "\(productId): offline.add counts what offline.estimate did")
            XCTAssertEqual(added["files"]?["done"]?.intValue, 0, "\(added)")
            tokens.append(try XCTUnwrap(added["token"]?.stringValue))
        }

        // Each segment arrives slowly and one file runs at a time, so verified files come apart.
        try await h.api.injectFaults("/media/vid-1/v0/seg", [["bytesPerSecond": 200_000, "repeat": 50]])
        try await h.api.injectFaults("/media/tr-hls/a0/seg", [["bytesPerSecond": 100_000, "repeat": 50]])
        let client = try await h.client()
        defer { Task { await client.close() } }
        _ = try await client.call("events.subscribe", ["topics": ["downloads"]])
        let events = EventCollector(client)
        _ = try await h.call("network.set", ["type": "wifi"])
        for (productId, (item, token)) in zip(products, zip(estimated, tokens)) {
            let cached = try await h.waitProduct(token, state: "cached", timeout: 90)
            let size = try XCTUnwrap(cached["sizeBytes"]?.intValue)
            XCTAssertEqual(cached["sizeKnown"]?.boolValue, true, "every GET told its size: \(cached)")
            XCTAssertEqual(cached["bytesOnDisk"]?.intValue, size)
            XCTAssertEqual(cached["progress"]?.intValue, 100)
            XCTAssertEqual(cached["files"]?["done"], cached["files"]?["total"], "\(cached)")
            let guess = try XCTUnwrap(item["sizeBytes"]?.doubleValue)
            XCTAssertEqual(guess, Double(size), accuracy: 0.25 * Double(size), "\(productId): estimate \(guess) against \(size) bytes")

            // What is on disk is the origin's, byte for byte, and the catalog holds its length.
            let files = h.mediaFiles().filter { $0.contains("/\(productId)/") || $0.hasPrefix("tracks/\(productId).") }
            XCTAssertEqual(files.count, cached["files"]?["total"]?.intValue, "\(files)")
            var onDisk = 0
            for file in files {
                let local = try Data(contentsOf: URL(fileURLWithPath: h.mediaDir + "/" + file))
                onDisk += local.count
                if file.hasPrefix("hls/") {
                    let remote = try Data(contentsOf: h.origin.dataDirectory.appendingPathComponent("media/" + file.dropFirst("hls/".count)))
                    XCTAssertEqual(local, remote, file)
                }
            }
            XCTAssertEqual(onDisk, size, "\(productId): \(files)")
            print("get-only: \(productId) estimated \(Int(guess)) bytes, \(size) downloaded in \(files.count) files")

            guard productId != "tr-1" else { continue }
            // A presentation's progress moves file by file while sizes are unknown.
            let progress = events.of("OfflineProgress").filter { $0.data["token"]?.stringValue == token }.map(\.data)
            let done = progress.compactMap { $0["files"]?["done"]?.intValue }
            XCTAssertEqual(done.count, progress.count, "every event counts files: \(progress)")
            XCTAssertGreaterThanOrEqual(Set(done).count, 2, "\(productId): reported as files were verified: \(done)")
            XCTAssertEqual(done, done.sorted(), "files done only grow")
            for event in progress {
                XCTAssertEqual(event["files"]?["total"], cached["files"]?["total"], "\(event)")
                guard event["sizeKnown"]?.boolValue == false, let done = event["files"]?["done"]?.intValue,
                    let total = event["files"]?["total"]?.intValue
                else { continue }
                XCTAssertEqual(event["progress"]?.intValue, done * 100 / total, "progress counts files until sizes are known: \(event)")
            }
        }
        let after = try await methods(h)
        XCTAssertEqual(after["HEAD"], before["HEAD"], "no HEAD reached the origin: \(after)")
        XCTAssertGreaterThan(after["GET"] ?? 0, before["GET"] ?? 0)
    }

    /// The admission counts files of unknown size for what the plan expects; when the `GET`s
    /// tell more (here the estimate kept for the product is made far too small), the cache
    /// limit still holds: the product waits `idle` with `CacheLimit`, and once the limit is
    /// raised it completes with every file the origin's.
    func testAProductBiggerThanItsEstimateStillStopsAtTheCacheLimit() async throws {
        let h = try DownloaderHarness(config: #"{"downloader":{"maxParallel":1}}"#)
        defer { h.discard() }
        try await refuseHead(h)
        try h.start()
        _ = try await h.call("network.set", ["type": "none"])
        let added = try await h.call("offline.add", ["productId": "vid-1"])
        let token = try XCTUnwrap(added["token"]?.stringValue)
        let planned = try XCTUnwrap(added["sizeBytes"]?.intValue)
        let pool = try h.catalogPool()
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE offlineProducts SET options = json_set(options, '$.estimate.bytes', 1) WHERE token = ?",
                arguments: [token])
        }
        let shrunk = try await h.call("offline.status", ["token": .string(token)])
        XCTAssertLessThan(shrunk["sizeBytes"]?.intValue ?? .max, planned / 2, "\(shrunk)")
        _ = try await h.call("policy.set", ["maxCacheBytes": .number(Double(planned / 2))])
        _ = try await h.call("network.set", ["type": "wifi"])
        var idle: JSONValue = .null
        try await waitUntil("vid-1 idle with CacheLimit: \(idle)", timeout: 60) {
            idle = try await h.call("offline.status", ["token": .string(token)])
            return idle["state"]?.stringValue == "idle" && idle["error"]?.stringValue == "CacheLimit"
        }
        XCTAssertLessThan(idle["files"]?["done"]?.intValue ?? .max, idle["files"]?["total"]?.intValue ?? 0)
        let used = try await pool.read { db in
            try Int.fetchOne(db, sql: "SELECT COALESCE(SUM(sizeBytes), 0) FROM files WHERE state = 'verified'") ?? 0
        }

        _ = try await h.call("policy.set", ["maxCacheBytes": .null])
        let cached = try await h.waitProduct(token, state: "cached", timeout: 60)
        XCTAssertEqual(cached["sizeKnown"]?.boolValue, true)
        XCTAssertEqual(cached["bytesOnDisk"], cached["sizeBytes"])
        let sizes = try h.mediaFiles().map { try FileManager.default.attributesOfItem(atPath: h.mediaDir + "/" + $0)[.size] as? Int ?? 0 }
        XCTAssertLessThanOrEqual(used, planned / 2 + (sizes.max() ?? 0), "at most the one file running when the limit was met goes past it")
        for file in h.mediaFiles() where file.hasPrefix("hls/vid-1/") {
            let local = try Data(contentsOf: URL(fileURLWithPath: h.mediaDir + "/" + file))
            let remote = try Data(contentsOf: h.origin.dataDirectory.appendingPathComponent("media/" + file.dropFirst("hls/".count)))
            XCTAssertEqual(local, remote, file)
        }
        let counted = try await methods(h)
        XCTAssertNil(counted["HEAD"], "no HEAD reached the origin: \(counted)")
    }
    /// A segment whose body arrived whole but was not committed when the downloader stopped
    /// (its size still unknown to the catalog, the final-named file back to `.part` at start)
    /// is verified by the `GET` that resumes it: the origin answers 416 with the length the
    /// `.part` already holds, and nothing is downloaded again.
    func testASegmentCompleteOnDiskButNotCommittedIsVerifiedWithoutDownloadingIt() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        try await refuseHead(h)
        let (token, _) = try await h.startAndOffline("vid-1")
        try h.stop()
        let segment = "hls/vid-1/v0/seg000.ts"
        let pool = try h.catalogPool()
        try await pool.write { db in
            let fileId = try XCTUnwrap(try Int64.fetchOne(db, sql: "SELECT id FROM files WHERE localPath = ?", arguments: [segment]))
            try db.execute(sql: "UPDATE files SET state = 'partial', sizeBytes = NULL, completedAt = NULL WHERE id = ?", arguments: [fileId])
            try db.execute(sql: "UPDATE downloads SET state = 'queued' WHERE fileId = ?", arguments: [fileId])
            try db.execute(sql: "UPDATE offlineProducts SET state = 'downloading', endedAt = NULL WHERE token = ?", arguments: [token])
        }
        let before = try await h.mediaStats()
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        let cached = try await h.waitProduct(token, state: "cached")
        XCTAssertEqual(cached["sizeKnown"]?.boolValue, true, "\(cached)")
        XCTAssertEqual(cached["bytesOnDisk"], cached["sizeBytes"])
        let after = try await h.mediaStats()
        let path = "/media/vid-1/v0/seg000.ts"
        XCTAssertEqual(after.full[path], before.full[path], "no second full body")
        XCTAssertEqual(after.ranged[path], before.ranged[path], "no ranged body either")
        let local = try Data(contentsOf: URL(fileURLWithPath: h.mediaDir + "/" + segment))
        let remote = try Data(contentsOf: h.origin.dataDirectory.appendingPathComponent("media/vid-1/v0/seg000.ts"))
        XCTAssertEqual(local, remote)
        let size = try await pool.read { db in try Int.fetchOne(db, sql: "SELECT sizeBytes FROM files WHERE localPath = ?", arguments: [segment]) }
        XCTAssertEqual(size, remote.count, "the catalog learned the size again")
    }
}
