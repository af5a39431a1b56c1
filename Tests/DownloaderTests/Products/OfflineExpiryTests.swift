import Foundation
import TestSupport
import Wire
import XCTest

/// Offline expiry through the socket: `sync.now` extends what is held (Feed.fm), and once the trusted
/// time (the origin's clock, moved with `/_control/clock`) passes a station's expiry, a `delete`
/// station is deleted and leaves `localOffline`, a `keep` one stays but is not valid.
final class OfflineExpiryTests: XCTestCase {
    let day = 86_400.0

    private func local(_ h: DownloaderHarness) async throws -> [String] {
        let list = try await h.call("stations.list")
        return (list["localOffline"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
    }

    func testExtensionKeepsAStationAndExpiryDeletesOrInvalidates() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        let events = try await h.client()
        _ = try await events.call("events.subscribe", ["topics": ["downloads"]])
        for station in ["st-9", "st-10"] {
            _ = try await h.call("stations.sync", ["stationId": .string(station)])
            try await h.waitStationComplete(station)
        }
        let keepManifest = try await h.manifest("st-9")
        let keepItem = try XCTUnwrap(keepManifest.keys.sorted().first)
        let deleteItems = try await h.manifest("st-10").keys.sorted()
        let filesBefore = h.mediaFiles()
        XCTAssertEqual(filesBefore.count, 6)

        // Two days on (st-10 lasts three): sync.now extends both from the server's new now.
        try await h.setServerClock(offset: 2 * day)
        let extended = try await h.call("sync.now")
        let ids = (extended["stations"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }.sorted()
        XCTAssertEqual(ids, ["st-10", "st-9"])
        XCTAssertEqual(extended["expired"]?.arrayValue?.count, 0)

        // Four days on: past the first expiry, not the extended one. stations.list shows the
        // server's time to the downloader; after a few capture rounds nothing has expired.
        try await h.setServerClock(offset: 4 * day)
        _ = try await local(h)
        try await Task.sleep(nanoseconds: 4_500_000_000)
        let afterExtension = try await local(h)
        XCTAssertEqual(afterExtension.sorted(), ["st-10", "st-9"], "the extension kept st-10")
        let state = try await h.call("offline.state", ["productId": .string(deleteItems[0])])
        XCTAssertEqual(state["state"]?.stringValue, "OFFLINED_AND_VALID")

        // Ten days on, no extension: st-10 (delete) goes with its files, st-9 (keep) stays, not valid.
        try await h.setServerClock(offset: 10 * day)
        var expiredEvent: JSONValue?
        let watcher = Task { () -> JSONValue? in
            for await event in events.events where event.type == "StationExpired" { return event.data }
            return nil
        }
        let deadline = Date().addingTimeInterval(20)
        var remaining = try await local(h)
        while remaining.contains("st-10"), Date() < deadline {
            try await Task.sleep(nanoseconds: 500_000_000)
            remaining = try await local(h)
        }
        XCTAssertEqual(remaining, ["st-9"])
        if remaining.contains("st-10") { watcher.cancel() } else { expiredEvent = await watcher.value }
        XCTAssertEqual(expiredEvent?["stationId"]?.stringValue, "st-10")
        let filesAfter = h.mediaFiles()
        XCTAssertEqual(filesAfter.count, 3, "st-10's files are deleted: \(filesAfter)")
        let gone = try await h.call("offline.state", ["productId": .string(deleteItems[0])])
        XCTAssertEqual(gone["state"]?.stringValue, "NOT_OFFLINED")
        let kept = try await h.call("offline.state", ["productId": .string(keepItem)])
        XCTAssertEqual(kept["state"]?.stringValue, "OFFLINED_BUT_NOT_VALID")
        print("offline expiry: extended \(ids), after +10 d local \(remaining), files \(filesBefore.count) → \(filesAfter.count)")
        await events.close()
    }
}
