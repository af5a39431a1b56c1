import Foundation
import TestSupport
import Wire
import XCTest

/// The local media server keeps a product and its rewritten playlists between requests while
/// the catalog does not change. Here the real downloader changes the product under a playlist
/// the server keeps (a rental renewed short, then long again; the product deleted; offlined
/// again) and the next request of the real player's server follows each change.
final class MediaServerCacheTests: XCTestCase {
    func testAKeptPlaylistFollowsRenewalsADeletionAndANewOffline() async throws {
        let rig = try MediaServerTests.Rig()
        defer { rig.discard() }
        _ = try await rig.call(rig.downloader, "network.set", ["type": "wifi"])
        let started = try await rig.call(rig.player, "media.server.start")
        let master = try XCTUnwrap(started["url"]?.stringValue) + "/p/vid-1/master.m3u8"
        let (token, _) = try await rig.offline(["productId": "vid-1", "rentalSeconds": 3600])
        let first = try await rig.get(master)
        XCTAssertEqual(first.status, 200)
        let kept = try await rig.get(master)
        XCTAssertEqual(kept.status, 200)
        XCTAssertEqual(kept.body, first.body, "the same playlist, from what the server kept")

        // Renewed as a rental of 1 s: once that ended, the playlist kept under the hour's rental is refused.
        let renewed = try await rig.call(rig.downloader, "offline.renewLicense", ["token": .string(token), "rentalSeconds": 1])
        let endsAt = try XCTUnwrap(parseServerTime(renewed["license"]?["expiresAt"]?.stringValue), "\(renewed)")
        while Date() < endsAt.addingTimeInterval(0.5) { try await Task.sleep(for: .milliseconds(50)) }
        let ended = try await rig.get(master)
        XCTAssertEqual(ended.status, 403, String(decoding: ended.body, as: UTF8.self))

        // Renewed for an hour again: served again at once.
        _ = try await rig.call(rig.downloader, "offline.renewLicense", ["token": .string(token), "rentalSeconds": 3600])
        let back = try await rig.get(master)
        XCTAssertEqual(back.status, 200, String(decoding: back.body, as: UTF8.self))
        XCTAssertEqual(back.body, first.body)

        // Deleted: gone at once.
        _ = try await rig.call(rig.downloader, "offline.delete", ["token": .string(token)])
        let deleted = try await rig.get(master)
        XCTAssertEqual(deleted.status, 404, String(decoding: deleted.body, as: UTF8.self))

        // Offlined again: served again, the same playlist.
        _ = try await rig.offline(["productId": "vid-1"])
        let again = try await rig.get(master)
        XCTAssertEqual(again.status, 200, String(decoding: again.body, as: UTF8.self))
        XCTAssertEqual(again.body, first.body)
    }
}
