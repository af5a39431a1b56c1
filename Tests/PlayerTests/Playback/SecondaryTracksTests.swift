import Foundation
import TestSupport
import Wire
import XCTest

/// Brightcove "Downloading Secondary Tracks" through the real downloader, player and origin:
/// French audio added to `vid-1` once it is offlined goes into the same token, a language the
/// video does not offer is refused with the ones it offers, the video stays playable while the
/// track is missing (also when its download fails), and the local media server lists the new
/// rendition once all of it is on disk.
final class SecondaryTracksTests: XCTestCase {
    private typealias Rig = MediaServerTests.Rig

    private func waitState(_ rig: Rig, _ token: String, _ state: String) async throws -> JSONValue {
        let deadline = Date().addingTimeInterval(90)
        var last: JSONValue = .null
        while Date() < deadline {
            last = try await rig.call(rig.downloader, "offline.status", ["token": .string(token)])
            if last["state"]?.stringValue == state { return last }
            try await Task.sleep(nanoseconds: 200_000_000)
        }
        throw OriginTestError("\(token) not \(state): \(last)\n\(rig.downloader.log.suffix(2000))")
    }

    func testAudioAddedToAnOfflinedVideoDownloadsIntoTheSameTokenAndReachesTheMediaServer() async throws {
        let rig = try Rig()
        defer { rig.discard() }
        _ = try await rig.call(rig.downloader, "network.set", ["type": "wifi"])
        let (token, held) = try await rig.offline(["productId": "vid-1"])
        XCTAssertEqual(held["audioLanguages"], ["en"])
        let started = try await rig.call(rig.player, "media.server.start")
        let base = try XCTUnwrap(started["url"]?.stringValue)

        // A language the video does not offer: a named error listing what it offers; nothing changes.
        var refused: Error?
        do {
            let accepted = try await rig.call(rig.downloader, "offline.add", ["productId": "vid-1", "audioLanguages": ["de"]])
            XCTFail("de accepted: \(accepted)")
        } catch {
            refused = error
        }
        let error = try XCTUnwrap(refused as? RPCError, "\(String(describing: refused))")
        XCTAssertEqual(error.name, "LanguageNotOffered", "\(error)")
        XCTAssertEqual(error.code, 1008)
        XCTAssertEqual(error.details["offered"], ["en", "fr"], "\(error)")
        XCTAssertEqual(error.details["field"], "audioLanguages")
        XCTAssertTrue(error.message.contains("fr"), error.message)
        let unchanged = try await rig.call(rig.downloader, "offline.status", ["token": .string(token)])
        XCTAssertEqual(unchanged["state"], "cached")
        XCTAssertEqual(unchanged["audioLanguages"], ["en"])

        // French audio whose first segment the origin refuses: the addition fails, the video
        // held stays offlined and served, without the French rendition.
        let frenchPlaylist = try String(
            contentsOf: rig.origin.dataDirectory.appendingPathComponent("media/vid-1/audio-fr/index.m3u8"),
            encoding: .utf8)
        let frenchSegments = frenchPlaylist.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }.map(String.init)
        let first = try XCTUnwrap(frenchSegments.first)
        try await rig.api.injectFaults("/media/vid-1/audio-fr/\(first)", [["status": 404, "repeat": 50]])
        let added = try await rig.call(rig.downloader, "offline.add", ["productId": "vid-1", "audioLanguages": ["fr"]])
        XCTAssertEqual(added["token"]?.stringValue, token, "the same token")
        XCTAssertNotEqual(added["state"], "cached", "\(added)")
        XCTAssertEqual(added["audioLanguages"], ["en", "fr"])
        let failed = try await waitState(rig, token, "failed")
        XCTAssertTrue(failed["reason"]?.stringValue?.hasPrefix("audio-fr/\(first)") == true, "\(failed)")
        let state = try await rig.call(rig.downloader, "offline.state", ["productId": "vid-1"])
        XCTAssertEqual(state["state"], "OFFLINED_AND_VALID", "the video held stays playable")
        let located = try await rig.call(rig.player, "media.locate", ["productId": "vid-1"])
        XCTAssertEqual(located["source"], "local", "\(located)")
        let masterMeanwhile = try await rig.get(base + "/p/vid-1/master.m3u8")
        XCTAssertEqual(masterMeanwhile.status, 200)
        let meanwhileText = String(decoding: masterMeanwhile.body, as: UTF8.self)
        XCTAssertFalse(meanwhileText.contains("audio-fr"), meanwhileText)
        XCTAssertTrue(meanwhileText.contains("/p/vid-1/v0/index.m3u8"), meanwhileText)
        let segment = try await rig.get(base + "/p/vid-1/v0/seg000.ts")
        XCTAssertEqual(segment.status, 200)
        let key = try await rig.get(base + "/p/vid-1/keys/k-vid-1")
        XCTAssertEqual(key.status, 200, "the key is served while the video held plays")

        // Served again: resumed, the French audio arrives with the usual events, in the same token.
        _ = try await rig.api.delete("/_control/faults")
        let client = try await rig.downloader.client()
        _ = try await client.call("events.subscribe", ["topics": ["downloads"]])
        let events = EventCollector(client)
        _ = try await rig.call(rig.downloader, "offline.resume", ["token": .string(token)])
        let cached = try await waitState(rig, token, "cached")
        try await events.wait("OfflineDone", timeout: 10) { $0.type == "OfflineDone" && $0.data["token"]?.stringValue == token }
        XCTAssertFalse(events.all.filter { $0.type == "ItemStateChanged" && $0.data["token"]?.stringValue == token }.isEmpty)
        await client.close()
        XCTAssertEqual(cached["audioLanguages"], ["en", "fr"])
        XCTAssertEqual(cached["segments"]?["done"], cached["segments"]?["total"])
        for name in ["index.m3u8"] + frenchSegments {
            let local = try Data(contentsOf: URL(fileURLWithPath: rig.dir.stateDir + "/media/hls/vid-1/audio-fr/" + name))
            let remote = try Data(contentsOf: rig.origin.dataDirectory.appendingPathComponent("media/vid-1/audio-fr/" + name))
            XCTAssertEqual(local, remote, name)
        }
        let master = String(decoding: try await rig.get(base + "/p/vid-1/master.m3u8").body, as: UTF8.self)
        XCTAssertTrue(master.contains("URI=\"/p/vid-1/audio-fr/index.m3u8\""), master)
        let french = try await rig.get(base + "/p/vid-1/audio-fr/index.m3u8")
        XCTAssertEqual(french.status, 200)
        let frenchText = String(decoding: french.body, as: UTF8.self)
        XCTAssertTrue(frenchText.contains("#EXT-X-ENDLIST"), frenchText)
        XCTAssertEqual(frenchText.split(separator: "\n").filter { $0.hasPrefix("/p/vid-1/audio-fr/") }.count, frenchSegments.count, frenchText)
        // Asking for what it holds again changes nothing.
        let again = try await rig.call(rig.downloader, "offline.add", ["productId": "vid-1", "audioLanguages": ["fr"]])
        XCTAssertEqual(again["state"], "cached")
        XCTAssertEqual(again["token"]?.stringValue, token)
        print("secondary tracks: de refused (offered en, fr); fr added to \(token) after a failed try, \(frenchSegments.count) segments, served")
    }
}
