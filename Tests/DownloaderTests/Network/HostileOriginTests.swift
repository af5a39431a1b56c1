import Foundation
import TestSupport
import Wire
import XCTest

/// A hostile or broken origin: each case refused or handled with a clear
/// error, and nothing written outside the media directory.
final class HostileOriginTests: XCTestCase {
    func testHostileManifestItemsAreRefused() async throws {
        let h = try DownloaderHarness(config: #"{"downloader":{"maxAttempts":2}}"#)
        defer { h.discard() }
        let real = try h.api.json(try await h.api.post("/v1/stations/st-10/offline", ["have": [String]()]))
        var items = real.objects("items")
        XCTAssertEqual(items.count, 3)
        var badId = items[0]
        badId["id"] = "../../etc/passwd"
        var foreign = items[0]
        foreign["id"] = "tr-foreign"
        foreign["url"] = "http://example.com/media/x.flac"
        var fileURL = items[0]
        fileURL["id"] = "tr-file"
        fileURL["url"] = "file:///etc/passwd"
        var wrongSha = items[1]
        wrongSha["sha256"] = String(repeating: "0", count: 64)
        var tooLong = items[2]
        tooLong["sizeBytes"] = (items[2]["sizeBytes"] as! Int) - 100
        // Every sync of st-10 gets the hostile manifest.
        let (client, events) = try await start(h, serving: real, items: [badId, foreign, fileURL, wrongSha, tooLong])
        defer { Task { await client.close() } }
        let result = try await h.call("stations.sync", ["stationId": "st-10"])
        let refused = result["refused"]?.arrayValue ?? []
        XCTAssertEqual(Set(refused.compactMap { $0["id"]?.stringValue }), ["../../etc/passwd", "tr-foreign", "tr-file"], "\(result)")
        XCTAssertEqual(result["total"]?.intValue, 2)

        // Both accepted items fail after maxAttempts: wrong checksum, body longer than declared.
        // (Watched through events: a further sync would queue the failed items again.)
        let done = try await events.wait("st-10 downloaded", timeout: 30) {
            $0.type == "StationDownloadComplete" && $0.data["stationId"]?.stringValue == "st-10"
        }
        XCTAssertEqual(done.data["failed"]?.intValue, 2, "\(done.data)")
        XCTAssertEqual(h.mediaFiles(), [], "content of failed items must be removed")
        XCTAssertTrue(h.service!.log.contains("ChecksumMismatch"))
        XCTAssertTrue(h.service!.log.contains("BodyTooLong"))
        // Nothing escaped the state directory's media folder.
        XCTAssertFalse(FileManager.default.fileExists(atPath: h.dir.stateDir + "/etc"))
        let stateEntries = try FileManager.default.contentsOfDirectory(atPath: h.dir.stateDir).sorted()
        XCTAssertTrue(stateEntries.allSatisfy { $0.hasPrefix("catalog") || $0 == "media" }, "\(stateEntries)")
    }

    /// A body that arrives whole and then fails its checks gives its slot back once, however
    /// early the next file started: with one transfer at a time, a file whose checksum is wrong
    /// is tried `maxAttempts` times between the good ones, the station completes with it failed,
    /// nothing stays counted as running, and a later station still downloads.
    func testABodyThatArrivesAndThenFailsItsChecksFreesItsSlotOnce() async throws {
        let h = try DownloaderHarness(config: #"{"downloader":{"maxAttempts":3,"maxParallel":1}}"#)
        defer { h.discard() }
        let real = try h.api.json(try await h.api.post("/v1/stations/st-10/offline", ["have": [String]()]))
        var items = real.objects("items")
        XCTAssertEqual(items.count, 3)
        items[1]["sha256"] = String(repeating: "0", count: 64)
        let (client, events) = try await start(h, serving: real, items: items)
        defer { Task { await client.close() } }
        _ = try await h.call("stations.sync", ["stationId": "st-10"])
        let done = try await events.wait("st-10 downloaded", timeout: 60) {
            $0.type == "StationDownloadComplete" && $0.data["stationId"]?.stringValue == "st-10"
        }
        XCTAssertEqual(done.data["failed"]?.intValue, 1, "\(done.data)")
        XCTAssertEqual(done.data["total"]?.intValue, 3, "\(done.data)")
        XCTAssertEqual(h.mediaFiles().count, 2, "the two good files are kept, the bad one's bytes removed")
        let attempts = try await h.catalogPool().read { db in
            try Int.fetchAll(db, sql: "SELECT attempts FROM files WHERE state != 'verified'")
        }
        XCTAssertEqual(attempts, [3], "the bad file was tried maxAttempts times")
        try await waitUntil("nothing counted as running", timeout: 10) {
            try await h.activeDownloads() == 0
        }
        _ = try await h.call("stations.sync", ["stationId": "st-9"])
        let next = try await events.wait("st-9 downloaded", timeout: 60) {
            $0.type == "StationDownloadComplete" && $0.data["stationId"]?.stringValue == "st-9"
        }
        XCTAssertEqual(next.data["failed"]?.intValue, 0, "\(next.data)")
    }

    func testTruncatedBodyAndIgnoredRangeStillVerify() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        let manifest = try await h.manifest("st-11")
        let target = try XCTUnwrap(manifest.values.max { $0.size < $1.size })
        // First answer cut short, the resume answered 200 with the whole body.
        try await h.api.injectFaults(target.url, [["truncateAfter": target.size / 2], ["ignoreRange": true]])
        try h.start()
        _ = try await h.call("stations.sync", ["stationId": "st-11"])
        try await h.waitStationComplete("st-11")
        XCTAssertEqual(try sha256(ofFile: h.mediaDir + "/" + localName(target.url)), target.sha256)
        let requests = try await h.api.stats().object("requests")
        XCTAssertEqual(requests.int(target.url), 2, "one truncated answer, one full retry")
    }

    func testServerErrorsRetriedAndCountedAtOrigin() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        let manifest = try await h.manifest("st-9")
        let target = try XCTUnwrap(manifest.values.first)
        try await h.api.injectFaults(target.url, [["status": 503, "repeat": 2], ["status": 429, "retryAfter": 0]])
        try await h.api.injectFaults("/v1/stations/st-9/offline", [["status": 500]])
        try h.start()
        _ = try await h.call("stations.sync", ["stationId": "st-9"])
        try await h.waitStationComplete("st-9")
        let requests = try await h.api.stats().object("requests")
        XCTAssertEqual(requests.int(target.url), 4, "503, 503, 429, then 200")
        // Other 4xx are never retried: a geo-blocked product answers once.
        let error = await XCTAssertThrowsAsync { _ = try await h.call("offline.add", ["productId": "tr-geo"]) }
        XCTAssertEqual((error as? RPCError)?.name, "ContentNotAvailableInLocation")
        let v1 = try await h.api.stats()
        XCTAssertEqual(v1.object("requests").int("/v1/playbackinfo/tr-geo"), 1)
    }

    /// Makes every sync of st-10 get `real` (its manifest) with `items` instead of its own, then
    /// starts the downloader with a client subscribed to its download events.
    private func start(
        _ h: DownloaderHarness, serving real: [String: Any],
        items: [[String: Any]]
    ) async throws -> (RPCClient, EventCollector) {
        var body = real
        body["items"] = items
        body.removeValue(forKey: "serverTime")
        try await h.api.injectFaults("/v1/stations/st-10/offline", [["body": body, "repeat": 1000]])
        try h.start()
        let client = try await h.client()
        let events = EventCollector(client)
        _ = try await client.call("events.subscribe", ["topics": ["downloads"]])
        return (client, events)
    }
}

func XCTAssertThrowsAsync(_ body: () async throws -> Void, file: StaticString = #filePath, line: UInt = #line) async -> Error? {
    do {
        try await body()
        XCTFail("expected an error", file: file, line: line)
        return nil
    } catch {
        return error
    }
}
