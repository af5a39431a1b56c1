import Foundation
import TestSupport
import Wire
import XCTest

/// Partial prepositioning (`downloader.catalog.prepositionSeconds`): an HLS item the catalog
/// queues by itself is downloaded only as far as its first seconds and ends `partiallyCached`;
/// an explicit `offline.add` of it downloads the rest.
final class PartialPrepositionTests: XCTestCase {
    /// The segment files of `vid-1` on disk (`.ts` and WebVTT under `hls/vid-1/`).
    private func segmentsOnDisk(_ h: DownloaderHarness) -> [String] {
        h.mediaFiles().filter { $0.hasPrefix("hls/vid-1/") && ($0.hasSuffix(".ts") || $0.hasSuffix(".vtt")) }
    }

    func testAPrepositionedVideoHoldsOnlyItsFirstSecondsUntilAskedForExplicitly() async throws {
        let h = try DownloaderHarness(config: #"{"downloader":{"catalog":{"prepositionSeconds":2}}}"#)
        defer { h.discard() }
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        let client = try await h.client()
        defer { Task { await client.close() } }
        let events = EventCollector(client)
        _ = try await client.call("events.subscribe", ["topics": ["downloads", "catalog"]])
        _ = try await h.call("catalog.refresh")
        _ = try await h.call("catalog.subscribe", ["sourceId": "src-video", "subscribed": true])
        _ = try await h.call("catalog.select", ["categoryId": "cat-video", "selected": true])

        // The catalog queues vid-1 by itself; it ends partiallyCached, never cached.
        let deadline = Date().addingTimeInterval(60)
        var token: String?
        while Date() < deadline, token == nil {
            let listed = try await h.call("offline.list")["items"]?.arrayValue ?? []
            token = listed.first { $0["productId"]?.stringValue == "vid-1" }?["token"]?.stringValue
            if token == nil { try await Task.sleep(nanoseconds: 150_000_000) }
        }
        let partialToken = try XCTUnwrap(token, "vid-1 was not prepositioned")
        let partial = try await h.waitProduct(partialToken, state: "partiallyCached", timeout: 60)
        XCTAssertEqual(partial["prepositionSeconds"]?.doubleValue, 2)
        // Both topics say so: the product's state (downloads) and the item's (catalog).
        try await events.wait("downloads ItemStateChanged partiallyCached", timeout: 10) {
            $0.type == "ItemStateChanged" && $0.data["token"]?.stringValue == partialToken && $0.data["state"] == "partiallyCached"
        }
        try await events.wait("catalog ItemStateChanged partiallyCached", timeout: 10) {
            $0.type == "ItemStateChanged" && $0.data["itemId"] == "it-vid-1" && $0.data["state"] == "partiallyCached"
        }
        let done = try XCTUnwrap(partial["segments"]?["done"]?.intValue)
        let total = try XCTUnwrap(partial["segments"]?["total"]?.intValue)
        XCTAssertGreaterThan(done, 0, "\(partial)")
        XCTAssertLessThan(done, total, "only the first seconds are downloaded: \(partial)")
        XCTAssertLessThan(partial["bytesOnDisk"]?.intValue ?? 0, partial["sizeBytes"]?.intValue ?? 0)
        // Every listed file is in the product; only the first segments of each playlist are on
        // disk (2 s segments: the first of the video and of each rendition), with the playlists.
        let segments = segmentsOnDisk(h)
        XCTAssertFalse(segments.isEmpty)
        XCTAssertTrue(segments.allSatisfy { $0.hasSuffix("seg000.ts") || $0.hasSuffix("seg000.vtt") }, "\(segments)")
        XCTAssertTrue(h.mediaFiles().contains("hls/vid-1/master.m3u8"), "\(h.mediaFiles())")
        XCTAssertTrue(h.mediaFiles().contains("hls/vid-1/v0/index.m3u8"), "\(h.mediaFiles())")
        // Not fully on disk: offline.state keeps saying so, the catalog counts it downloaded.
        let state = try await h.call("offline.state", ["productId": "vid-1"])["state"]
        XCTAssertEqual(state, "NOT_OFFLINED")
        let item = try await h.call("catalog.items", ["filter": "downloadedWithCategory", "categoryId": "cat-video"])["items"]?.arrayValue
        XCTAssertEqual(item?.compactMap { $0["id"]?.stringValue }, ["it-vid-1"])
        XCTAssertEqual(item?.first?["state"], "partiallyCached")

        // The limit is kept with the product: after a kill -9 it is still partial, nothing more wanted.
        h.kill9()
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        let restarted = try await h.call("offline.status", ["token": .string(partialToken)])
        XCTAssertEqual(restarted["state"], "partiallyCached")
        XCTAssertEqual(restarted["prepositionSeconds"]?.doubleValue, 2)
        XCTAssertEqual(restarted["segments"]?["done"]?.intValue, done)
        let client2 = try await h.client()
        defer { Task { await client2.close() } }
        let events2 = EventCollector(client2)
        _ = try await client2.call("events.subscribe", ["topics": ["downloads"]])

        // An explicit request downloads the rest into the same token.
        let added = try await h.call("offline.add", ["productId": "vid-1"])
        XCTAssertEqual(added["token"]?.stringValue, partialToken)
        let whole = try await h.waitProduct(partialToken, state: "cached", timeout: 60)
        try await events2.wait("OfflineDone", timeout: 10) { $0.type == "OfflineDone" && $0.data["token"]?.stringValue == partialToken }
        XCTAssertEqual(whole["segments"]?["done"], whole["segments"]?["total"])
        XCTAssertEqual(whole["segments"]?["total"]?.intValue, total)
        XCTAssertNil(whole["prepositionSeconds"])
        XCTAssertEqual(whole["bytesOnDisk"], whole["sizeBytes"])
        XCTAssertGreaterThan(segmentsOnDisk(h).count, segments.count)
        let cachedState = try await h.call("offline.state", ["productId": "vid-1"])["state"]
        XCTAssertEqual(cachedState, "OFFLINED_AND_VALID")
        print("partial prepositioning: \(done) of \(total) segments, \(segments.count) segment files on disk: \(segments)")
    }

    func testPrepositionSecondsOffDownloadsTheWholeVideo() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        _ = try await h.call("catalog.refresh")
        _ = try await h.call("catalog.subscribe", ["sourceId": "src-video", "subscribed": true])
        _ = try await h.call("catalog.select", ["categoryId": "cat-video", "selected": true])
        let deadline = Date().addingTimeInterval(60)
        var last: JSONValue = .null
        while Date() < deadline {
            let listed = try await h.call("offline.list")["items"]?.arrayValue ?? []
            last = listed.first { $0["productId"]?.stringValue == "vid-1" } ?? .null
            if ["cached", "partiallyCached", "failed"].contains(last["state"]?.stringValue ?? "") { break }
            try await Task.sleep(nanoseconds: 150_000_000)
        }
        XCTAssertEqual(last["state"], "cached", "\(last)")
        XCTAssertNil(last["prepositionSeconds"])
    }
}
