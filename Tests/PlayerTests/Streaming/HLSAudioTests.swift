import Foundation
import MediaDecoder
import TestSupport
import Wire
import XCTest

/// A TIDAL track delivered as HLS (`tr-hls` of the reference origin), offlined by the real
/// downloader and played from offline storage through an ALSA `file` PCM: the AES-128 AAC
/// variant in MPEG-TS segments and the FLAC variant in fMP4 (init section and fragments). The
/// device must get exactly what FFmpeg decodes from the origin's own presentation.
final class HLSAudioTests: XCTestCase {
    let credentials = PlayerHarness.originCredentials

    /// The origin, a downloader and a capturing player on one state directory.
    private func rig() async throws -> (PlayerHarness, OriginProcess, ServiceProcess, EventLog) {
        let h = try PlayerHarness()
        let origin = try OriginProcess.start()
        let downloader = try h.startDownloader(origin: origin)
        let client = try await h.start(extraArgs: ["--origin", origin.baseURL], environment: credentials)
        _ = try await h.call("player.config.set", ["loudnessNormalizationMode": "OFF"])
        _ = try await downloader.call("network.set", ["type": "wifi"])
        return (h, origin, downloader, EventLog(client))
    }

    private func reference(_ origin: OriginProcess, variant: String, of product: String = "tr-hls", in h: PlayerHarness) async throws -> [UInt8] {
        try await HLSReference.decoded(origin, variant: variant, of: product, in: h)
    }

    private func play(_ h: PlayerHarness, _ log: EventLog) async throws -> [RPCEvent] {
        _ = try await h.call("player.load", PlayerHarness.product("tr-hls"))
        _ = try await h.call("player.play")
        return try await log.untilState("IDLE", timeout: 30)
    }

    func testOfflinedHLSTrackPlaysBitExactForBothVariants() async throws {
        let (h, origin, downloader, log) = try await rig()
        defer {
            downloader.kill9()
            origin.discard()
        }

        // The default variant: the lowest (no variant has video), AAC in encrypted MPEG-TS.
        let aac = try await downloader.offlineCached(["productId": "tr-hls"])
        XCTAssertEqual(aac["variant"]?["codecs"]?.stringValue, "mp4a.40.2", "\(aac)")
        let events = try await play(h, log)
        XCTAssertTrue(events.contains { $0.data["playbackContext"]?["audioCodec"]?.stringValue == "aac" }, "\(events.map { "\($0.type) \($0.data)" })")
        XCTAssertFalse(events.contains { $0.data["message"] != nil }, "no error event: \(events.map { "\($0.type) \($0.data)" })")
        let aacReference = try await reference(origin, variant: "a0", in: h)
        XCTAssertGreaterThan(aacReference.count, 4 * 44_100 * 4, "at least 4 s of stereo 16-bit")
        XCTAssertEqual(h.captured.count, aacReference.count, "sample-exact length")
        XCTAssertTrue(h.captured == aacReference, "the device got exactly FFmpeg's decode of the origin's AAC variant")

        // A chosen bitrate: the FLAC variant, an fMP4 init section and its fragments.
        let offer = try await downloader.call("offline.variants", ["productId": "tr-hls"])
        let top = try XCTUnwrap(offer["variants"]?.arrayValue?.compactMap { $0["bandwidth"]?.intValue }.max())
        _ = try await downloader.call("offline.delete", ["token": try XCTUnwrap(aac["token"])])
        let flac = try await downloader.offlineCached(["productId": "tr-hls", "bitrate": .number(Double(top))])
        XCTAssertEqual(flac["variant"]?["codecs"]?.stringValue, "fLaC", "\(flac)")
        let flacEvents = try await play(h, log)
        XCTAssertFalse(flacEvents.contains { $0.data["message"] != nil }, "no error event: \(flacEvents.map { "\($0.type) \($0.data)" })")
        XCTAssertTrue(
            flacEvents.contains { $0.data["playbackContext"]?["audioCodec"]?.stringValue == "flac" },
            "the decoder's codec: \(flacEvents.map { "\($0.type) \($0.data)" })")
        let flacReference = try await reference(origin, variant: "a1", in: h)
        XCTAssertEqual(h.captured.count, flacReference.count, "sample-exact length")
        XCTAssertTrue(h.captured == flacReference, "the device got the FLAC variant bit for bit")
        print("hls audio: AAC/TS/AES-128 \(aacReference.count / 4) frames and FLAC/fMP4 \(flacReference.count / 4) frames equal FFmpeg's decode")
    }

    /// A damaged segment on disk fails playback with a named error instead of a silent gap.
    func testADamagedSegmentFailsWithItsName() async throws {
        let (h, origin, downloader, log) = try await rig()
        defer {
            downloader.kill9()
            origin.discard()
        }
        _ = try await downloader.offlineCached(["productId": "tr-hls"])
        let segments = try FileManager.default.subpathsOfDirectory(atPath: h.mediaDir).filter { $0.hasSuffix("seg001.ts") }
        let segment = h.mediaDir + "/" + (try XCTUnwrap(segments.first, "seg001.ts under \(h.mediaDir)"))
        let handle = try XCTUnwrap(FileHandle(forUpdatingAtPath: segment))
        try handle.truncate(atOffset: 1000)
        try handle.close()
        // The load answers the failure, since it comes before any sound; the event says it too.
        do {
            _ = try await h.call("player.load", PlayerHarness.product("tr-hls"))
            XCTFail("a damaged presentation does not load")
        } catch let error as RPCError {
            XCTAssertEqual(error.name, "DecryptFailed", "\(error)")
            XCTAssertTrue(error.message.contains("seg001.ts"), "the segment named: \(error.message)")
        }
        let events = try await log.until(timeout: 30) { $0.data["message"] != nil }
        let error = try XCTUnwrap(events.last)
        XCTAssertEqual(error.type, "DecryptFailed", "\(error.data)")
        XCTAssertTrue(error.data["message"]?.stringValue?.contains("seg001.ts") == true, "the segment named: \(error.data)")
    }

    /// TIDAL re-validation of an HLS track whose presentation changed at the origin: the new one
    /// is staged in a folder of its own while the old one still plays, survives a kill -9 of the
    /// downloader, and once complete replaces the old one in one step; the device then plays the
    /// new content and the old files are gone.
    func testAChangedPresentationIsReofflinedBesideTheOldOneAcrossAKill() async throws {
        var (h, origin, downloader, log) = try await rig()
        defer {
            downloader.kill9()
            origin.discard()
        }
        let api = OriginAPI(origin: origin)
        let before = try await downloader.offlineCached(["productId": "tr-hls"])
        let token = try XCTUnwrap(before["token"]?.stringValue)
        let oldHash = try XCTUnwrap(before["manifestHash"]?.stringValue)
        let oldFiles = try FileManager.default.subpathsOfDirectory(atPath: h.mediaDir + "/hls/tr-hls").filter { $0.hasSuffix(".ts") }
        XCTAssertFalse(oldFiles.isEmpty)

        // The label re-delivers tr-hls (now tr-hls-2's presentation); its segments arrive slowly.
        let moved = try await api.post("/_control/redeliver", ["productId": "tr-hls", "presentationOf": "tr-hls-2"], authorized: false)
        XCTAssertEqual(moved.status, 200)
        try await api.injectFaults("/media/tr-hls-2/a0/", [["bytesPerSecond": 8_000, "repeat": 100]])
        _ = try await api.post("/_control/clock", ["offsetSeconds": 2 * 86_400], authorized: false)
        let round = try await downloader.call("sync.now")
        let outcome = round["revalidated"]?.arrayValue?.first { $0["token"]?.stringValue == token }
        XCTAssertEqual(outcome?["result"]?.stringValue, "staged", "\(round)")
        let staging = try await downloader.call("offline.status", ["token": .string(token)])
        XCTAssertEqual(staging["manifestHash"]?.stringValue, oldHash, "still the old presentation: \(staging)")
        XCTAssertEqual(staging["staged"]?["productId"]?.stringValue, "tr-hls-2")

        // Meanwhile the old presentation plays, whole.
        _ = try await play(h, log)
        let oldReference = try await reference(origin, variant: "a0", in: h)
        XCTAssertTrue(h.captured == oldReference, "the held presentation plays while the new one downloads")

        // kill -9 during the staging; the restarted downloader finishes it.
        downloader.kill9()
        downloader = try h.startDownloader(origin: origin)
        _ = try await api.delete("/_control/faults")
        var done = staging
        let end = Date().addingTimeInterval(60)
        while done["staged"] != nil || done["manifestHash"]?.stringValue == oldHash, Date() < end {
            _ = try? await downloader.call("sync.now")
            try await Task.sleep(nanoseconds: 200_000_000)
            done = try await downloader.call("offline.status", ["token": .string(token)])
        }
        XCTAssertEqual(done["productId"]?.stringValue, "tr-hls-2", "\(done)\n\(downloader.log.suffix(2000))")
        XCTAssertEqual(done["state"]?.stringValue, "cached")
        XCTAssertEqual(done["staged"], nil)
        XCTAssertNotEqual(done["manifestHash"]?.stringValue, oldHash)
        XCTAssertFalse(
            FileManager.default.fileExists(atPath: h.mediaDir + "/hls/tr-hls/a0/" + (oldFiles.first ?? "")),
            "the old presentation's files are deleted after the swap")

        // The device now plays the new presentation.
        _ = try await play(h, log)
        let newReference = try await reference(origin, variant: "a0", of: "tr-hls-2", in: h)
        XCTAssertNotEqual(newReference, oldReference)
        XCTAssertTrue(h.captured == newReference, "the re-offlined presentation plays: \(h.captured.count) bytes, \(newReference.count) expected")
        let located = try await h.call("media.locate", ["productId": "tr-hls"])
        print(
            "hls re-offline: \(before["productId"]?.stringValue ?? "?") → \(done["productId"]?.stringValue ?? "?") across a kill -9, now at \(located["path"]?.stringValue ?? "?")"
        )
    }
}
