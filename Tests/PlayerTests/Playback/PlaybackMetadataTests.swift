import Foundation
import TestSupport
import Wire
import XCTest

/// The metadata the player reports of a product it plays tells what is played: an HLS product's
/// `audioBitRate` is the rate of the variant the downloader chose (not of the whole presentation
/// with the variants left aside), a video's context names its `videoQuality`, and a product
/// played from the device shows its images on disk. Offlined by the real downloader from the
/// reference origin, read through the player's socket.
final class PlaybackMetadataTests: XCTestCase {
    /// The origin, a downloader and a player on one state directory.
    private func rig() async throws -> (PlayerHarness, OriginProcess, ServiceProcess, EventLog) {
        let h = try PlayerHarness()
        let origin = try OriginProcess.start()
        let downloader = try h.startDownloader(origin: origin)
        let client = try await h.start(extraArgs: ["--origin", origin.baseURL], environment: PlayerHarness.originCredentials)
        _ = try await downloader.call("network.set", ["type": "wifi"])
        return (h, origin, downloader, EventLog(client))
    }

    /// `player.load` of `productId` as `productType`; the data of its `MediaProductTransition`.
    private func load(_ h: PlayerHarness, _ log: EventLog, _ productId: String, productType: String = "TRACK") async throws -> JSONValue {
        _ = try await h.call(
            "player.load",
            [
                "mediaProduct": [
                    "productId": .string(productId), "productType": .string(productType),
                    "referenceId": .string("ref-\(productId)"),
                ]
            ])
        let seen = try await log.until {
            $0.type == "MediaProductTransition" && $0.data["activeMediaProduct"]?["productId"]?.stringValue == productId
        }
        return try XCTUnwrap(seen.last).data
    }

    /// Bits per second of the media playlist in `folder` as the downloader stored it: the bytes
    /// of its segments and init section over the sum of its `EXTINF` durations (each file read
    /// whole, as the reference origin's are).
    private func measuredBitRate(_ folder: String) throws -> Double {
        let playlist = try String(contentsOfFile: folder + "/index.m3u8", encoding: .utf8)
        let seconds = playlist.split(separator: "\n").filter { $0.hasPrefix("#EXTINF:") }
            .compactMap { Double($0.dropFirst("#EXTINF:".count).split(separator: ",").first ?? "") }.reduce(0, +)
        let names = try FileManager.default.contentsOfDirectory(atPath: folder).filter { !$0.hasSuffix(".m3u8") }
        let bytes = try names.reduce(0) { total, name in
            total + ((try FileManager.default.attributesOfItem(atPath: folder + "/" + name)[.size] as? NSNumber)?.intValue ?? 0)
        }
        XCTAssertGreaterThan(seconds, 0, "EXTINF durations in \(folder)/index.m3u8")
        XCTAssertFalse(names.isEmpty, "segments in \(folder)")
        return Double(bytes) * 8 / seconds
    }

    /// `tr-hls` has an AAC variant and a FLAC one: the context's `audioBitRate` is the bit rate of
    /// the one offlined, measured from its segments, which is within its declared `BANDWIDTH`
    /// (a peak) — in the transition and in `player.status`, for each variant in turn.
    func testAnHLSTracksBitRateIsThatOfTheVariantItPlays() async throws {
        let (h, origin, downloader, log) = try await rig()
        defer {
            downloader.kill9()
            origin.discard()
        }

        let aac = try await downloader.offlineCached(["productId": "tr-hls"])
        XCTAssertEqual(aac["variant"]?["codecs"]?.stringValue, "mp4a.40.2", "\(aac)")
        let aacBandwidth = try XCTUnwrap(aac["variant"]?["bandwidth"]?.doubleValue)
        let aacExpected = try measuredBitRate(h.mediaDir + "/hls/tr-hls/a0")
        var transition = try await load(h, log, "tr-hls")
        let aacRate = try XCTUnwrap(transition["playbackContext"]?["audioBitRate"]?.doubleValue, "\(transition)")
        XCTAssertEqual(aacRate, aacExpected, accuracy: 1, "the AAC variant's own rate: \(transition)")
        XCTAssertLessThanOrEqual(aacRate, aacBandwidth, "within the variant's BANDWIDTH")
        var status = try await h.status()
        XCTAssertEqual(status["playbackContext"]?["audioBitRate"]?.doubleValue, aacRate, "\(status)")
        _ = try await h.call("player.reset")

        // The FLAC variant, chosen by its bitrate.
        let offer = try await downloader.call("offline.variants", ["productId": "tr-hls"])
        let top = try XCTUnwrap(offer["variants"]?.arrayValue?.compactMap { $0["bandwidth"]?.intValue }.max())
        _ = try await downloader.call("offline.delete", ["token": try XCTUnwrap(aac["token"])])
        let flac = try await downloader.offlineCached(["productId": "tr-hls", "bitrate": .number(Double(top))])
        XCTAssertEqual(flac["variant"]?["codecs"]?.stringValue, "fLaC", "\(flac)")
        let flacExpected = try measuredBitRate(h.mediaDir + "/hls/tr-hls/a1")
        transition = try await load(h, log, "tr-hls")
        let flacRate = try XCTUnwrap(transition["playbackContext"]?["audioBitRate"]?.doubleValue, "\(transition)")
        XCTAssertEqual(flacRate, flacExpected, accuracy: 1, "the FLAC variant's own rate: \(transition)")
        XCTAssertLessThanOrEqual(flacRate, Double(top), "within the variant's BANDWIDTH")
        XCTAssertGreaterThan(flacRate, aacRate)
        status = try await h.status()
        XCTAssertEqual(status["playbackContext"]?["audioBitRate"]?.doubleValue, flacRate, "\(status)")
        _ = try await h.call("player.reset")
        print("hls bit rate: AAC \(Int(aacRate)) b/s (BANDWIDTH \(Int(aacBandwidth))), FLAC \(Int(flacRate)) b/s (BANDWIDTH \(top))")
    }

    /// A video offlined at the policy's `offlineVideoQuality` (asked without a quality or a type)
    /// plays with that `videoQuality` in its context, and with the bit rate of the variant the
    /// downloader chose; a track's context has `videoQuality: null`.
    func testAVideosContextNamesTheQualityItWasOfflinedAt() async throws {
        let (h, origin, downloader, log) = try await rig()
        defer {
            downloader.kill9()
            origin.discard()
        }
        _ = try await downloader.call("policy.set", ["offlineVideoQuality": "LOW"])

        let video = try await downloader.offlineCached(["productId": "vid-1"])
        XCTAssertEqual(video["quality"]?.stringValue, "LOW", "\(video)")
        let transition = try await load(h, log, "vid-1", productType: "VIDEO")
        let context = transition["playbackContext"]
        XCTAssertEqual(context?["videoQuality"]?.stringValue, "LOW", "\(transition)")
        let status = try await h.status()
        XCTAssertEqual(status["playbackContext"]?["videoQuality"]?.stringValue, "LOW", "\(status)")
        // The variant chosen (the lowest with video) carries the audio played.
        let variant = try XCTUnwrap(video["variant"], "\(video)")
        XCTAssertEqual(variant["hasVideo"]?.boolValue, true)
        let expected = try measuredBitRate(h.mediaDir + "/hls/vid-1/v0")
        XCTAssertEqual(context?["audioBitRate"]?.doubleValue ?? 0, expected, accuracy: 1, "\(transition)")
        XCTAssertLessThanOrEqual(context?["audioBitRate"]?.doubleValue ?? .infinity, variant["bandwidth"]?.doubleValue ?? 0)
        _ = try await h.call("player.reset")

        // A track is no video.
        _ = try await downloader.offlineCached(["productId": "tr-1"])
        let track = try await load(h, log, "tr-1")
        XCTAssertEqual(track["playbackContext"]?["videoQuality"], JSONValue.null, "present, and null: \(track)")
        _ = try await h.call("player.reset")
    }

    /// A stream shows the image paths the origin named; the same product once offlined, and an
    /// offlined video, show their images on disk as `offline.status` lists them — in
    /// `player.status`, the transition and its `playbackContext` — and each file is there.
    func testImagesOfAProductPlayedFromTheDeviceAreItsFilesOnDisk() async throws {
        let (h, origin, downloader, log) = try await rig()
        defer {
            downloader.kill9()
            origin.discard()
        }

        let streamed = try await load(h, log, "tr-1")
        XCTAssertEqual(streamed["playbackContext"]?["offline"]?.boolValue, false)
        XCTAssertNotNil(streamed["images"]?["poster"]?.stringValue, "the origin's images of a stream: \(streamed)")
        XCTAssertFalse(streamed["images"]?["poster"]?.stringValue?.hasPrefix("media/") ?? true, "a path on the origin: \(streamed)")
        _ = try await h.call("player.reset")

        for (productId, type) in [("tr-1", "TRACK"), ("vid-1", "VIDEO")] {
            let offlined = try await downloader.offlineCached(["productId": .string(productId), "productType": .string(type)])
            let images = try XCTUnwrap(offlined["images"], "offline.status names the images: \(offlined)")
            XCTAssertNotNil(images["poster"]?.stringValue)
            XCTAssertNotNil(images["thumbnail"]?.stringValue)
            let transition = try await load(h, log, productId, productType: type)
            XCTAssertEqual(transition["playbackContext"]?["offline"]?.boolValue, true, "\(transition)")
            XCTAssertEqual(transition["images"], images, "the transition: \(transition)")
            XCTAssertEqual(transition["playbackContext"]?["images"], images, "its context: \(transition)")
            let status = try await h.status()
            XCTAssertEqual(status["images"], images, "player.status: \(status)")
            XCTAssertEqual(status["playbackContext"]?["images"], images)
            for (kind, path) in images.objectValue ?? [:] {
                let file = h.dir.stateDir + "/" + (path.stringValue ?? "")
                XCTAssertTrue(FileManager.default.fileExists(atPath: file), "\(productId)'s \(kind) at \(file)")
            }
            _ = try await h.call("player.reset")
        }
    }
}
