import Foundation
import HTTPClient
import TestSupport
import Wire
import XCTest

/// The local media server with a product prepositioned in part (`partiallyCached`): ffmpeg,
/// which cannot authenticate at the origin, decodes the whole video through the server — the
/// first segments from disk, the rest relayed by the server from the origin — and gets the
/// origin's frames. Then `offline.add` completes the product.
final class PartialMediaServerTests: XCTestCase {
    private typealias Rig = MediaServerTests.Rig

    /// The segment files of `vid-1` on disk.
    private func segmentsOnDisk(_ rig: Rig) -> [String] {
        let media = rig.dir.stateDir + "/media/hls/vid-1"
        guard let walk = FileManager.default.enumerator(atPath: media) else { return [] }
        return walk.compactMap { $0 as? String }.filter { $0.hasSuffix(".ts") || $0.hasSuffix(".vtt") }.sorted()
    }

    private func waitVid1(_ rig: Rig, state: String) async throws -> JSONValue {
        let deadline = Date().addingTimeInterval(90)
        var last: JSONValue = .null
        while Date() < deadline {
            let listed = try await rig.call(rig.downloader, "offline.list")["items"]?.arrayValue ?? []
            last = listed.first { $0["productId"]?.stringValue == "vid-1" } ?? .null
            if last["state"]?.stringValue == state { return last }
            if last["state"]?.stringValue == "failed" { break }
            try await Task.sleep(nanoseconds: 200_000_000)
        }
        throw OriginTestError("vid-1 not \(state): \(last)\n\(rig.downloader.log.suffix(2000))")
    }

    /// Subscribes the rig's downloader to the video source and category, whose prepositioning
    /// keeps only vid-1's first seconds; returns vid-1 once it is `partiallyCached`.
    private func prepositionVid1(_ rig: Rig) async throws -> JSONValue {
        _ = try await rig.call(rig.downloader, "network.set", ["type": "wifi"])
        _ = try await rig.call(rig.downloader, "catalog.refresh")
        _ = try await rig.call(rig.downloader, "catalog.subscribe", ["sourceId": "src-video", "subscribed": true])
        _ = try await rig.call(rig.downloader, "catalog.select", ["categoryId": "cat-video", "selected": true])
        return try await waitVid1(rig, state: "partiallyCached")
    }

    func testAPartiallyCachedVideoDecodesWhollyThroughTheLocalServer() async throws {
        let rig = try Rig(downloaderConfig: #"{"downloader":{"catalog":{"prepositionSeconds":2}}}"#)
        defer { rig.discard() }
        let partial = try await prepositionVid1(rig)
        let total = try XCTUnwrap(partial["segments"]?["total"]?.intValue)
        XCTAssertLessThan(partial["segments"]?["done"]?.intValue ?? total, total, "\(partial)")
        let onDisk = segmentsOnDisk(rig)
        XCTAssertTrue(!onDisk.isEmpty && onDisk.allSatisfy { $0.hasSuffix("seg000.ts") || $0.hasSuffix("seg000.vtt") }, "\(onDisk)")

        let started = try await rig.call(rig.player, "media.server.start")
        let base = try XCTUnwrap(started["url"]?.stringValue)
        let located = try await rig.call(rig.player, "media.locate", ["productId": "vid-1"])
        XCTAssertEqual(located["source"], "local")
        XCTAssertEqual(located["state"], "PARTIALLY_CACHED")
        XCTAssertEqual(located["url"]?.stringValue, base + "/p/vid-1/master.m3u8")
        let headers = try await MediaServerTests.originHeaders(rig)
        let origin = rig.origin.baseURL + "/media/vid-1"

        // The playlists are whole: every segment listed, pointing at the server, and ENDLIST.
        let media = try await rig.get(base + "/p/vid-1/v0/index.m3u8")
        XCTAssertEqual(media.status, 200)
        let mediaText = String(decoding: media.body, as: UTF8.self)
        XCTAssertTrue(mediaText.contains("#EXT-X-ENDLIST"), mediaText)
        XCTAssertEqual(
            mediaText.split(separator: "\n").filter { $0.hasPrefix("/p/vid-1/v0/seg") }.count,
            mediaText.split(separator: "\n").filter { $0.hasPrefix("#EXTINF") }.count, mediaText)
        XCTAssertGreaterThan(mediaText.split(separator: "\n").filter { $0.hasPrefix("#EXTINF") }.count, 1, mediaText)
        // A segment not on disk comes from the origin, byte for byte, with Range too.
        let relayed = try await rig.get(base + "/p/vid-1/v0/seg001.ts")
        XCTAssertEqual(relayed.status, 200)
        let fromOrigin = try await rig.api.get("/media/vid-1/v0/seg001.ts")
        XCTAssertEqual(relayed.body, fromOrigin.body)
        let ranged = try await HTTPClient().send(
            HTTPRequest(
                method: "GET", url: base + "/p/vid-1/v0/seg001.ts",
                headers: ["Range": "bytes=188-375"], timeoutSeconds: 10))
        XCTAssertEqual(ranged.status, 206)
        XCTAssertEqual(ranged.body, Array(fromOrigin.body[188...375]))
        // An origin that refuses it: a named 502, not a hang; the segment on disk still plays.
        try await rig.api.injectFaults("/media/vid-1/v0/seg001.ts", [["status": 404]])
        let refused = try await rig.get(base + "/p/vid-1/v0/seg001.ts")
        XCTAssertEqual(refused.status, 502)
        XCTAssertTrue(String(decoding: refused.body, as: UTF8.self).contains("answered 404"), String(decoding: refused.body, as: UTF8.self))
        let local0 = try await rig.get(base + "/p/vid-1/v0/seg000.ts")
        XCTAssertEqual(local0.status, 200)
        let origin0 = try await rig.api.get("/media/vid-1/v0/seg000.ts")
        XCTAssertEqual(local0.body, origin0.body)

        // The whole video, through the master and through the media playlist, as the origin's.
        let local = try MediaServerTests.framemd5(base + "/p/vid-1/master.m3u8", maps: ["0:v:0", "0:a:0"])
        let remote = try MediaServerTests.framemd5(origin + "/master.m3u8", maps: ["0:p:1:v:0", "0:p:1:a:1"], headers: headers)
        XCTAssertGreaterThan(local.count, 100, "video and audio frames of 4 s or more")
        MediaServerTests.assertSameFrames(local, remote, "partially cached, default variant")
        let localMedia = try MediaServerTests.framemd5(base + "/p/vid-1/v0/index.m3u8", maps: ["0:v:0", "0:a:0"])
        let remoteMedia = try MediaServerTests.framemd5(origin + "/v0/index.m3u8", maps: ["0:v:0", "0:a:0"], headers: headers)
        MediaServerTests.assertSameFrames(localMedia, remoteMedia, "partially cached, media playlist")
        // Relaying writes nothing: the downloader's files are as they were.
        XCTAssertEqual(segmentsOnDisk(rig), onDisk)

        // An explicit request completes it; the server then reads every segment from disk.
        _ = try await rig.call(rig.downloader, "offline.add", ["productId": "vid-1"])
        let whole = try await waitVid1(rig, state: "cached")
        XCTAssertEqual(whole["segments"]?["done"]?.intValue, total)
        XCTAssertGreaterThan(segmentsOnDisk(rig).count, onDisk.count)
        let after = try MediaServerTests.framemd5(base + "/p/vid-1/v0/index.m3u8", maps: ["0:v:0", "0:a:0"])
        MediaServerTests.assertSameFrames(after, remoteMedia, "cached after offline.add")
        print("partial media server: framemd5 equal (\(local.count) frames) with \(onDisk.count) of \(total) segments on disk")
    }

    func testAPartiallyCachedVideoPastItsOfflineWindowIsRefused() async throws {
        let rig = try Rig(downloaderConfig: #"{"downloader":{"catalog":{"prepositionSeconds":2}}}"#)
        defer { rig.discard() }
        let partial = try await prepositionVid1(rig)
        let validUntil = try XCTUnwrap(parseServerTime(partial["offlineValidUntil"]?.stringValue), "\(partial)")
        let started = try await rig.call(rig.player, "media.server.start")
        let base = try XCTUnwrap(started["url"]?.stringValue)
        let before = try await rig.get(base + "/p/vid-1/keys/k-vid-1")
        XCTAssertEqual(before.status, 200)
        // An hour of server time past the offline window.
        let moved = try await rig.api.post("/_control/clock", ["offsetSeconds": validUntil.timeIntervalSinceNow + 3600], authorized: false)
        XCTAssertEqual(moved.status, 200)
        _ = try await rig.call(rig.downloader, "stations.list") // the server's time reaches the catalog
        // The downloader records the server's time as it goes: the key is refused once it has.
        let deadline = Date().addingTimeInterval(20)
        var keyStatus = before.status
        while keyStatus != 403, Date() < deadline {
            try await Task.sleep(nanoseconds: 100_000_000)
            keyStatus = try await rig.get(base + "/p/vid-1/keys/k-vid-1").status
        }
        XCTAssertEqual(keyStatus, 403)
        for path in ["master.m3u8", "v0/index.m3u8", "v0/seg000.ts", "v0/seg001.ts", "keys/k-vid-1"] {
            let refused = try await rig.get(base + "/p/vid-1/" + path)
            XCTAssertEqual(refused.status, 403, path)
        }
    }
}
