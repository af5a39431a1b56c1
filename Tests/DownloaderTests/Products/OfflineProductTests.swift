import Foundation
import TestSupport
import Wire
import XCTest

/// Media products over the socket: replacement ids, refusals, token lifecycle across a restart.
final class OfflineProductTests: XCTestCase {
    func testReplacementRefusalsAndTokenLifecycle() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        try h.start()
        let added = try await h.call("offline.add", ["productId": "tr-7"])
        let token = try XCTUnwrap(added["token"]?.stringValue)
        XCTAssertEqual(added["requestedProductId"]?.stringValue, "tr-7")
        XCTAssertEqual(added["productId"]?.stringValue, "tr-7b")
        let done = try await h.waitProduct(token, state: "cached")
        XCTAssertEqual(done["progress"]?.intValue, 100)
        XCTAssertNotNil(done["endedAt"]?.stringValue)
        let v1 = try await h.call("offline.state", ["productId": "tr-7"])
        XCTAssertEqual(v1["state"]?.stringValue, "OFFLINED_AND_VALID")

        let notDownloadable = await XCTAssertThrowsAsync { _ = try await h.call("offline.add", ["productId": "tr-8"]) }
        XCTAssertEqual((notDownloadable as? RPCError)?.name, "NotDownloadable")
        let bad = await XCTAssertThrowsAsync { _ = try await h.call("offline.add", ["productId": "../x"]) }
        XCTAssertEqual((bad as? RPCError)?.code, -32602)

        // The token survives a restart.
        h.kill9()
        try h.start()
        let v2 = try await h.call("offline.status", ["token": .string(token)])
        XCTAssertEqual(v2["state"]?.stringValue, "cached")
        let list = try await h.call("offline.list")
        XCTAssertEqual(list["items"]?.arrayValue?.count, 1)

        // Pause and resume a slow one, then delete everything.
        try await h.api.injectFaults("/media/", [["bytesPerSecond": 20_000, "repeat": 5]])
        let slow = try await h.call("offline.add", ["productId": "tr-1"])
        let slowToken = try XCTUnwrap(slow["token"]?.stringValue)
        _ = try await h.waitProduct(slowToken, state: "downloading")
        let v3 = try await h.call("offline.pause", ["token": .string(slowToken)])
        XCTAssertEqual(v3["state"]?.stringValue, "paused")
        _ = try await h.api.delete("/_control/faults")
        let v4 = try await h.call("offline.resume", ["token": .string(slowToken)])
        XCTAssertEqual(v4["state"]?.stringValue, "queued")
        _ = try await h.waitProduct(slowToken, state: "cached")
        let deleted = try await h.call("offline.deleteAll")
        XCTAssertEqual(deleted["deleted"]?.intValue, 2)
        XCTAssertEqual(h.mediaFiles(), [])
        let v5 = try await h.call("offline.state", ["productId": "tr-7"])
        XCTAssertEqual(v5["state"]?.stringValue, "NOT_OFFLINED")
    }

    /// `offline.add` of a video that names neither a type nor a quality gets the policy's video
    /// quality (the origin's answer says it is a video), not the audio one; a track keeps the
    /// audio one, and a quality the request names is used as it is.
    func testAnOfflineWithoutATypeTakesTheQualityOfTheProductsType() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        try h.start()
        _ = try await h.call("policy.set", ["offlineAudioQuality": "LOSSLESS", "offlineVideoQuality": "LOW"])
        let video = try await h.call("offline.add", ["productId": "vid-1"])
        XCTAssertEqual(video["quality"]?.stringValue, "LOW", "\(video)")
        let track = try await h.call("offline.add", ["productId": "tr-1"])
        XCTAssertEqual(track["quality"]?.stringValue, "LOSSLESS", "\(track)")
        let named = try await h.call("offline.estimate", ["productId": "vid-1", "quality": "MEDIUM"])
        XCTAssertEqual(named["items"]?.arrayValue?.first?["canBeDownloaded"]?.boolValue, true, "\(named)")
        let asked = try await h.api.stats().object("playbackInfoQualities")
        XCTAssertEqual(asked["offline:LOW"] as? Int, 1, "vid-1 at the video quality: \(asked)")
        XCTAssertEqual(asked["offline:MEDIUM"] as? Int, 1, "the quality named: \(asked)")
        XCTAssertEqual(asked["offline:LOSSLESS"] as? Int, 2, "tr-1, and vid-1's first look before its type was known: \(asked)")
    }
}
