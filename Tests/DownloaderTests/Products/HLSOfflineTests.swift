import Foundation
import GRDB
import TestSupport
import Wire
import XCTest

/// HLS offlining through the socket against the reference origin's `vid-1`: what it offers,
/// the variant and renditions chosen, every playlist, segment and image downloaded once and
/// verified, keys in the catalog only, and a segment that keeps failing named in the failure.
final class HLSOfflineTests: XCTestCase {
    /// The media playlists and segment counts the origin serves for vid-1.
    private func originSegments(_ h: DownloaderHarness, _ folder: String) throws -> [String] {
        let text = try String(contentsOf: h.origin.dataDirectory.appendingPathComponent("media/vid-1/\(folder)/index.m3u8"), encoding: .utf8)
        return text.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }.map { "\(folder)/\($0)" }
    }

    func testVariantsListWhatThePresentationOffers() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        try h.start()
        let offer = try await h.call("offline.variants", ["productId": "vid-1"])
        let variants = try XCTUnwrap(offer["variants"]?.arrayValue)
        XCTAssertEqual(variants.map { $0["hasVideo"]?.boolValue }, [false, true, true])
        XCTAssertEqual(variants.compactMap { $0["resolution"]?.stringValue }, ["320x180", "640x360"])
        XCTAssertTrue(variants.allSatisfy { ($0["bandwidth"]?.doubleValue ?? 0) > 0 && $0["codecs"]?.stringValue != nil })
        let renditions = try XCTUnwrap(offer["renditions"]?.arrayValue)
        XCTAssertEqual(
            renditions.map { "\($0["type"]?.stringValue ?? "")/\($0["language"]?.stringValue ?? "")/\($0["default"]?.boolValue ?? false)" },
            ["SUBTITLES/en/true", "AUDIO/en/true", "AUDIO/fr/false"])
        let progressive = await XCTAssertThrowsAsync { _ = try await h.call("offline.variants", ["productId": "tr-1"]) }
        XCTAssertEqual((progressive as? RPCError)?.name, "NotSupported")
    }

    func testDefaultOfflineDownloadsLowestVideoVariantWithKeysInTheCatalog() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        let (token, cached) = try await h.startAndOffline("vid-1")
        // The lowest variant that has video, the default audio (muxed) and subtitles (English).
        XCTAssertEqual(cached["manifestType"]?.stringValue, "hls")
        XCTAssertEqual(cached["variant"]?["resolution"]?.stringValue, "320x180", "\(cached)")
        XCTAssertEqual(cached["audioLanguages"], ["en"])
        XCTAssertEqual(cached["subtitleLanguages"], ["en"])
        let expected = try originSegments(h, "v0") + originSegments(h, "subs-en")
        XCTAssertEqual(cached["segments"]?["total"]?.intValue, expected.count)
        XCTAssertEqual(cached["segments"]?["done"]?.intValue, expected.count)
        XCTAssertEqual(cached["progress"]?.intValue, 100)
        XCTAssertEqual(cached["bytesOnDisk"], cached["sizeBytes"])
        // Poster and thumbnail, relative to the state directory.
        let poster = try XCTUnwrap(cached["images"]?["poster"]?.stringValue)
        let thumbnail = try XCTUnwrap(cached["images"]?["thumbnail"]?.stringValue)
        for image in [poster, thumbnail] {
            let onDisk = try Data(contentsOf: URL(fileURLWithPath: h.dir.stateDir + "/" + image))
            XCTAssertEqual(Array(onDisk.prefix(4)), [0x89, 0x50, 0x4e, 0x47], "\(image) is a PNG")
        }
        // Every file once, byte for byte what the origin serves; nothing of the other variants.
        let files = h.mediaFiles()
        XCTAssertEqual(
            Set(files.filter { $0.hasPrefix("hls/") }),
            Set((["master.m3u8", "v0/index.m3u8", "subs-en/index.m3u8"] + expected).map { "hls/vid-1/\($0)" }))
        for file in files where file.hasPrefix("hls/vid-1/") {
            let local = try Data(contentsOf: URL(fileURLWithPath: h.mediaDir + "/" + file))
            let remote = try Data(contentsOf: h.origin.dataDirectory.appendingPathComponent("media/vid-1/" + file.dropFirst("hls/vid-1/".count)))
            XCTAssertEqual(local, remote, file)
        }
        // The key is in the catalog's license and nowhere in the media folder or on the socket.
        let licenseId = try XCTUnwrap(cached["license"]?["licenseId"]?.stringValue)
        XCTAssertEqual(cached["license"]?["keyIds"], ["k-vid-1"])
        let stored = try await h.catalogPool().read { db in try Data.fetchOne(db, sql: "SELECT keys FROM licenses WHERE id = ?", arguments: [licenseId]) }
        let key = try XCTUnwrap(try JSONValue.parse(Array(try XCTUnwrap(stored)))["k-vid-1"]?.stringValue)
        let served = try await h.api.get("/v1/keys/k-vid-1", headers: ["X-License": licenseId])
        XCTAssertEqual(Data(served.body).base64EncodedString(), key)
        XCTAssertFalse(files.contains { $0.contains("key") }, "\(files)")
        let raw = Data(served.body)
        for file in files {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: h.mediaDir + "/" + file))
            XCTAssertNil(bytes.range(of: raw), "\(file) holds the key")
        }
        XCTAssertFalse(String(decoding: cached.serialized(), as: UTF8.self).contains(key))
        let valid = try await h.call("offline.state", ["productId": "vid-1"])
        XCTAssertEqual(valid["state"]?.stringValue, "OFFLINED_AND_VALID")

        // Deleting the token removes every file of the presentation.
        _ = try await h.call("offline.delete", ["token": .string(token)])
        XCTAssertEqual(h.mediaFiles(), [])
        print("hls: vid-1 default offline = \(expected.count) segments + 3 playlists + 2 images, key only in the catalog")
    }

    func testBitrateAndFrenchAudioChooseTheirPlaylists() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        let offer = try await h.call("offline.variants", ["productId": "vid-1"])
        let top = try XCTUnwrap(offer["variants"]?.arrayValue?.compactMap { $0["bandwidth"]?.intValue }.max())
        let bad = await XCTAssertThrowsAsync { _ = try await h.call("offline.add", ["productId": "vid-1", "audioLanguages": ["de"]]) }
        XCTAssertEqual((bad as? RPCError)?.name, "LanguageNotOffered")
        XCTAssertEqual((bad as? RPCError)?.code, 1008)
        XCTAssertTrue((bad as? RPCError)?.message.contains("fr") == true, "\(String(describing: bad))")
        let client = try await h.client()
        _ = try await client.call("events.subscribe", ["topics": ["downloads"]])
        let events = EventCollector(client)
        let added = try await h.call(
            "offline.add",
            [
                "productId": "vid-1", "bitrate": .number(Double(top + 1)),
                "audioLanguages": ["fr"], "subtitleLanguages": [],
            ])
        let cached = try await h.waitProduct(try XCTUnwrap(added["token"]?.stringValue), state: "cached")
        // Progress is the product's: bytes of all its files and segments done of the total; its
        // size is exact once every file's GET told it, an estimate before.
        _ = try await events.wait("OfflineDone", timeout: 10) { $0.type == "OfflineDone" }
        let progress = events.of("OfflineProgress")
        XCTAssertFalse(progress.isEmpty)
        XCTAssertTrue(
            progress.allSatisfy {
                $0.data["segments"]?["total"] == cached["segments"]?["total"]
                    && $0.data["files"]?["total"] == cached["files"]?["total"]
                    && ($0.data["sizeKnown"]?.boolValue == false || $0.data["sizeBytes"] == cached["sizeBytes"])
            },
            "\(progress.map(\.data))")
        let done = progress.compactMap { $0.data["segments"]?["done"]?.intValue }
        XCTAssertEqual(done, done.sorted(), "segments done only grow")
        await client.close()
        XCTAssertEqual(cached["variant"]?["resolution"]?.stringValue, "640x360")
        XCTAssertEqual(cached["audioLanguages"], ["fr"])
        XCTAssertEqual(cached["subtitleLanguages"], [])
        let hls = Set(h.mediaFiles().filter { $0.hasPrefix("hls/") })
        let expected = try originSegments(h, "v1") + originSegments(h, "audio-fr")
        XCTAssertEqual(hls, Set((["master.m3u8", "v1/index.m3u8", "audio-fr/index.m3u8"] + expected).map { "hls/vid-1/\($0)" }))
        XCTAssertEqual(cached["segments"]?["total"]?.intValue, expected.count)
    }

    func testASegmentThatKeepsFailingFailsTheItemWithItsName() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        // offline.add asks nothing of a segment; every GET of this one is refused.
        try await h.api.injectFaults("/media/vid-1/v0/seg001.ts", [["status": 404, "repeat": 20]])
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        let added = try await h.call("offline.add", ["productId": "vid-1"])
        let failed = try await h.waitProduct(try XCTUnwrap(added["token"]?.stringValue), state: "failed", timeout: 60)
        XCTAssertEqual(failed["error"]?.stringValue, "DownloadFailed")
        let reason = try XCTUnwrap(failed["reason"]?.stringValue)
        XCTAssertTrue(reason.hasPrefix("v0/seg001.ts: "), reason)
        let state = try await h.call("offline.state", ["productId": "vid-1"])
        XCTAssertNotEqual(state["state"]?.stringValue, "OFFLINED_AND_VALID")
        // Resumed once the origin serves it again: the rest was kept, the item completes.
        _ = try await h.api.delete("/_control/faults")
        _ = try await h.call("offline.resume", ["token": added["token"]!])
        let cached = try await h.waitProduct(try XCTUnwrap(added["token"]?.stringValue), state: "cached", timeout: 60)
        XCTAssertEqual(cached["segments"]?["done"], cached["segments"]?["total"])
        print("hls: a failing segment fails the item as \(reason.prefix(60))…, resume completes it")
    }

    func testASegmentDeletedOutsideCassetteIsFetchedAgainAtStart() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        let (token, _) = try await h.startAndOffline("vid-1")
        try h.stop()
        let victim = h.mediaDir + "/hls/vid-1/v0/seg001.ts"
        let original = try Data(contentsOf: URL(fileURLWithPath: victim))
        try FileManager.default.removeItem(atPath: victim)
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        let cached = try await h.waitProduct(token, state: "cached")
        XCTAssertEqual(cached["segments"]?["done"], cached["segments"]?["total"])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: victim)), original)
    }

    /// A playbackinfo that announces HLS but leads to something else is refused as a whole, with
    /// the reason named, and nothing is stored.
    func testHostilePresentationsAreRefusedAndNothingIsWritten() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        let real = try h.api.json(try await h.api.get("/v1/playbackinfo/vid-1?mode=offline"))
        let manifest = try XCTUnwrap(real["manifest"] as? [String: Any])
        func variant(_ change: (inout [String: Any]) -> Void) -> [String: Any] {
            var info = real
            info.removeValue(forKey: "serverTime")
            var m = manifest
            change(&m)
            info["manifest"] = m
            return info
        }
        let cases: [(String, [String: Any], String)] = [
            (
                "not a playlist",
                variant {
                    $0["url"] = "/media/vid-1/subs-en/seg000.vtt"
                    $0.removeValue(forKey: "sha256")
                }, "HLSMissingHeader"
            ),
            (
                "not text",
                variant {
                    $0["url"] = "/media/tr-1.flac"
                    $0.removeValue(forKey: "sha256")
                }, "HLSBadEncoding"
            ),
            ("another host", variant { $0["url"] = "http://elsewhere.invalid/media/vid-1/master.m3u8" }, "another host"),
            ("wrong checksum", variant { $0["sha256"] = String(repeating: "0", count: 64) }, "SHA-256"),
            (
                "a media playlist",
                variant {
                    $0["url"] = "/media/vid-1/v0/index.m3u8"
                    $0.removeValue(forKey: "sha256")
                }, "not a master playlist"
            ),
        ]
        try h.start()
        for (what, info, reason) in cases {
            try await h.api.injectFaults("/v1/playbackinfo/vid-1", [["body": info]])
            do {
                _ = try await h.call("offline.add", ["productId": "vid-1"])
                XCTFail("\(what): accepted")
            } catch let error as RPCError {
                XCTAssertEqual(error.name, "BadManifest", "\(what): \(error)")
                XCTAssertTrue(error.message.contains(reason), "\(what): \(error.message)")
            }
        }
        let list = try await h.call("offline.list")
        XCTAssertEqual(list["items"]?.arrayValue?.count, 0)
        XCTAssertEqual(h.mediaFiles(), [])
    }

    /// Pause, resume, re-validation and cancel act on a presentation as on one file.
    func testPauseResumeRevalidateAndCancelAPresentation() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        try await h.api.injectFaults("/media/vid-1/", [["bytesPerSecond": 20_000, "repeat": 500]])
        let added = try await h.call("offline.add", ["productId": "vid-1"])
        let token = try XCTUnwrap(added["token"]?.stringValue)
        _ = try await h.waitProduct(token, state: "downloading", timeout: 30)
        let paused = try await h.call("offline.pause", ["token": .string(token)])
        XCTAssertEqual(paused["state"]?.stringValue, "paused")
        try await Task.sleep(nanoseconds: 700_000_000)
        let before = try await h.call("offline.status", ["token": .string(token)])
        try await Task.sleep(nanoseconds: 1_500_000_000)
        let after = try await h.call("offline.status", ["token": .string(token)])
        XCTAssertEqual(after["state"]?.stringValue, "paused")
        XCTAssertEqual(after["segments"]?["done"], before["segments"]?["done"], "nothing completes while paused")
        XCTAssertLessThan(after["segments"]?["done"]?.intValue ?? 99, after["segments"]?["total"]?.intValue ?? 0)

        _ = try await h.api.delete("/_control/faults")
        _ = try await h.call("offline.resume", ["token": .string(token)])
        let cached = try await h.waitProduct(token, state: "cached", timeout: 60)
        XCTAssertEqual(cached["segments"]?["done"], cached["segments"]?["total"])

        // Re-validation with the same presentation, once due (two days on): unchanged, still
        // valid, nothing fetched again.
        try await h.setServerClock(offset: 2 * 86_400)
        let mediaBefore = try await h.mediaStats()
        let synced = try await h.call("sync.now")
        let outcome = synced["revalidated"]?.arrayValue?.first { $0["token"]?.stringValue == token }
        XCTAssertEqual(outcome?["result"]?.stringValue, "unchanged", "\(synced)")
        let mediaAfter = try await h.mediaStats()
        XCTAssertEqual(mediaAfter.full.filter { $0.key.hasSuffix(".ts") }, mediaBefore.full.filter { $0.key.hasSuffix(".ts") })
        let state = try await h.call("offline.state", ["productId": "vid-1"])
        XCTAssertEqual(state["state"]?.stringValue, "OFFLINED_AND_VALID")

        // Cancel a second download midway: failed, Cancelled, no .part left behind.
        _ = try await h.call("offline.delete", ["token": .string(token)])
        XCTAssertEqual(h.mediaFiles(), [])
        try await h.api.injectFaults("/media/vid-1/", [["bytesPerSecond": 20_000, "repeat": 500]])
        let again = try await h.call("offline.add", ["productId": "vid-1"])
        let second = try XCTUnwrap(again["token"]?.stringValue)
        _ = try await h.waitProduct(second, state: "downloading", timeout: 30)
        let cancelled = try await h.call("offline.cancel", ["token": .string(second)])
        XCTAssertEqual(cancelled["state"]?.stringValue, "failed")
        XCTAssertEqual(cancelled["error"]?.stringValue, "Cancelled")
        XCTAssertFalse(h.mediaFiles().contains { $0.hasSuffix(".part") }, "\(h.mediaFiles())")
        _ = try await h.api.delete("/_control/faults")
        _ = try await h.call("offline.delete", ["token": .string(second)])
        XCTAssertEqual(h.mediaFiles(), [])
    }

    /// A presentation larger than the cache waits `idle` with `CacheLimit` when it no longer
    /// fits, and completes once the limit allows it.
    func testACacheTooSmallForThePresentationKeepsItIdleUntilRaised() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        let estimate = try await h.call("offline.estimate", ["productId": "vid-1"])
        let size = try XCTUnwrap(estimate["items"]?.arrayValue?.first?["sizeBytes"]?.intValue)
        _ = try await h.call("policy.set", ["maxCacheBytes": .number(Double(size / 2))])
        let added = try await h.call("offline.add", ["productId": "vid-1"])
        let token = try XCTUnwrap(added["token"]?.stringValue)
        let idle = try await h.waitProduct(token, state: "idle", timeout: 30)
        XCTAssertEqual(idle["error"]?.stringValue, "CacheLimit", "\(idle)")
        XCTAssertLessThan(idle["segments"]?["done"]?.intValue ?? 99, idle["segments"]?["total"]?.intValue ?? 0)
        _ = try await h.call("policy.set", ["maxCacheBytes": .null])
        let cached = try await h.waitProduct(token, state: "cached", timeout: 60)
        XCTAssertEqual(cached["segments"]?["done"], cached["segments"]?["total"])
    }
}
