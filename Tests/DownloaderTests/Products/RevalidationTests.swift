import Foundation
import GRDB
import StateDB
import TestSupport
import Wire
import XCTest

/// TIDAL re-validation through the socket, with the origin's clock moved past
/// `offlineRevalidateAt` (one day in the test catalog) and `sync.now` starting a round.
final class RevalidationTests: XCTestCase {
    let day = 86_400.0

    private func outcome(_ answer: JSONValue, _ token: String) -> JSONValue? {
        answer["revalidated"]?.arrayValue?.first { $0["token"]?.stringValue == token }
    }

    /// The file the player would play for `productId` (the shared `OfflineAvailability` answer).
    private func playable(_ h: DownloaderHarness, _ productId: String) async throws -> OfflineAvailability.LocalFile? {
        try await h.catalogPool().read { db in try OfflineAvailability.localFile(productId: productId, db: db) }
    }

    func testSameHashRefreshesValidityAndFailuresChangeNothing() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        let (token, first) = try await h.startAndOffline("tr-1")
        let firstUntil = try XCTUnwrap(parseServerTime(first["offlineValidUntil"]?.stringValue))
        let files = h.mediaFiles()
        let mediaBefore = try await h.mediaStats()

        // Not due yet: a round leaves it alone.
        let early = try await h.call("sync.now")
        XCTAssertNil(outcome(early, token), "not past offlineRevalidateAt: \(early)")

        // Two days on: due. Same manifest → validity refreshed, nothing downloaded.
        try await h.setServerClock(offset: 2 * day)
        let same = try await h.call("sync.now")
        XCTAssertEqual(outcome(same, token)?["result"]?.stringValue, "unchanged", "\(same)")
        let refreshed = try await h.call("offline.status", ["token": .string(token)])
        let refreshedUntil = try XCTUnwrap(parseServerTime(refreshed["offlineValidUntil"]?.stringValue))
        XCTAssertGreaterThan(refreshedUntil.timeIntervalSince(firstUntil), day, "validity moved with the server's clock")
        XCTAssertNotNil(refreshed["revalidatedAt"]?.stringValue)
        XCTAssertEqual(h.mediaFiles(), files)
        let mediaAfter = try await h.mediaStats()
        XCTAssertEqual(mediaAfter.full, mediaBefore.full, "no media request for an unchanged manifest")
        XCTAssertEqual(mediaAfter.ranged, mediaBefore.ranged)

        // Four days on with a failing origin (5xx): nothing changes, the error is shown.
        try await h.setServerClock(offset: 4 * day)
        try await h.api.injectFaults("/v1/playbackinfo/", Array(repeating: ["status": 503], count: 4))
        try await h.api.injectFaults("/v1/offline/extend", Array(repeating: ["status": 503], count: 4))
        let failing = await XCTAssertThrowsAsync { _ = try await h.call("sync.now") }
        XCTAssertNotNil(failing, "nothing got through: sync.now fails")
        let unchanged = try await h.call("offline.status", ["token": .string(token)])
        XCTAssertEqual(unchanged["offlineValidUntil"], refreshed["offlineValidUntil"])
        XCTAssertEqual(unchanged["manifestHash"], refreshed["manifestHash"])
        XCTAssertNotNil(unchanged["revalidationError"]?.stringValue)
        XCTAssertEqual(h.mediaFiles(), files)
        _ = try await h.api.delete("/_control/faults")

        // Forty days on, origin refusing everything: past offlineValidUntil the product is not
        // valid, but its file stays (only the user deletes), and a later success restores it.
        try await h.setServerClock(offset: 40 * day)
        try await h.api.injectFaults("/v1/playbackinfo/", Array(repeating: ["status": 503], count: 4))
        try await h.api.injectFaults("/v1/offline/extend", Array(repeating: ["status": 503], count: 4))
        _ = try await h.call("stations.list") // the server's time reaches the downloader
        let lapsed = try await h.call("offline.state", ["productId": "tr-1"])
        XCTAssertEqual(lapsed["state"]?.stringValue, "OFFLINED_BUT_NOT_VALID")
        XCTAssertEqual(h.mediaFiles(), files, "an invalid product keeps its file")
        _ = try await h.api.delete("/_control/faults")
        let again = try await h.call("sync.now")
        XCTAssertEqual(outcome(again, token)?["result"]?.stringValue, "unchanged", "\(again)")
        let restored = try await h.call("offline.state", ["productId": "tr-1"])
        XCTAssertEqual(restored["state"]?.stringValue, "OFFLINED_AND_VALID")
        print(
            "re-validation: unchanged → valid until +\(Int(refreshedUntil.timeIntervalSince(firstUntil) / day)) d, 5xx → unchanged, past validity → \(lapsed["state"]?.stringValue ?? "?") → \(restored["state"]?.stringValue ?? "?")"
        )
    }

    func testChangedHashStagesBesideTheOldFileAndSwapsAcrossAKill() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        let (token, before) = try await h.startAndOffline("tr-1")
        let oldHash = try XCTUnwrap(before["manifestHash"]?.stringValue)
        let oldLookup = try await playable(h, "tr-1")
        let oldFile = try XCTUnwrap(oldLookup)
        let oldSha = try sha256(ofFile: h.mediaDir + "/" + oldFile.relativePath)

        // The label redelivers tr-1 (now tr-2's file), and the new file arrives slowly.
        let redeliver = try await h.api.post("/_control/redeliver", ["productId": "tr-1", "trackId": "tr-2"], authorized: false)
        XCTAssertEqual(redeliver.status, 200)
        let info = try h.api.json(try await h.api.get("/v1/playbackinfo/tr-1?mode=offline"))
        let newHash = try XCTUnwrap(info["manifestHash"] as? String)
        let manifest = info.object("manifest")
        let newPath = try XCTUnwrap(manifest["url"] as? String)
        let newSha = try XCTUnwrap(manifest["sha256"] as? String)
        let newSize = try XCTUnwrap((manifest["sizeBytes"] as? NSNumber)?.intValue)
        XCTAssertNotEqual(newHash, oldHash)
        try await h.api.injectFaults(newPath, Array(repeating: ["bytesPerSecond": max(2_000, newSize / 8)], count: 20))

        try await h.setServerClock(offset: 2 * day)
        let round = try await h.call("sync.now")
        XCTAssertEqual(outcome(round, token)?["result"]?.stringValue, "staged", "\(round)")

        // While the new file downloads, the product is still the old one, valid and playable.
        var staging = try await h.call("offline.status", ["token": .string(token)])
        let deadline = Date().addingTimeInterval(30)
        while (staging["staged"]?["bytesOnDisk"]?.intValue ?? 0) == 0, Date() < deadline {
            try await Task.sleep(nanoseconds: 100_000_000)
            staging = try await h.call("offline.status", ["token": .string(token)])
        }
        XCTAssertEqual(staging["state"]?.stringValue, "cached")
        XCTAssertEqual(staging["manifestHash"]?.stringValue, oldHash)
        XCTAssertEqual(staging["staged"]?["manifestHash"]?.stringValue, newHash)
        XCTAssertGreaterThan(staging["staged"]?["bytesOnDisk"]?.intValue ?? 0, 0, "the new file is on its way: \(staging)")
        let duringState = try await h.call("offline.state", ["productId": "tr-1"])
        XCTAssertEqual(duringState["state"]?.stringValue, "OFFLINED_AND_VALID")
        let duringLookup = try await playable(h, "tr-1")
        let during = try XCTUnwrap(duringLookup)
        XCTAssertEqual(during.relativePath, oldFile.relativePath)
        XCTAssertTrue(during.isVerified)
        XCTAssertEqual(try sha256(ofFile: h.mediaDir + "/" + during.relativePath), oldSha)

        // kill -9 in the middle: after the restart it is still entirely the old product.
        h.kill9()
        let afterKill = try await playable(h, "tr-1")
        XCTAssertEqual(afterKill?.relativePath, oldFile.relativePath)
        XCTAssertEqual(try sha256(ofFile: h.mediaDir + "/" + oldFile.relativePath), oldSha)
        try h.start()
        let events = try await h.client()
        _ = try await events.call("events.subscribe", ["topics": ["downloads"]])
        let restarted = try await h.call("offline.status", ["token": .string(token)])
        XCTAssertEqual(restarted["manifestHash"]?.stringValue, oldHash)
        XCTAssertEqual(restarted["staged"]?["manifestHash"]?.stringValue, newHash, "the staging survived the kill")

        // The download resumes; once verified, one transaction switches the product.
        let watcher = Task { () -> JSONValue? in
            for await event in events.events where event.type == "OfflineRevalidated" && event.data["result"]?.stringValue == "replaced" {
                return event.data
            }
            return nil
        }
        let done = try await h.statusOnceSwapped(token, to: newHash, seen: restarted)
        XCTAssertEqual(done["manifestHash"]?.stringValue, newHash, "\(done)")
        XCTAssertEqual(done["staged"], nil)
        XCTAssertEqual(done["state"]?.stringValue, "cached")
        if done["manifestHash"]?.stringValue != newHash { watcher.cancel() }
        let swapped = await watcher.value
        XCTAssertEqual(swapped?["result"]?.stringValue, "replaced")
        let newLookup = try await playable(h, "tr-1")
        let newFile = try XCTUnwrap(newLookup)
        XCTAssertNotEqual(newFile.relativePath, oldFile.relativePath)
        XCTAssertEqual(try sha256(ofFile: h.mediaDir + "/" + newFile.relativePath), newSha)
        // tr-1's images were staged with the new file and moved with it (`images-{mark}/`).
        let newImages = ["poster", "thumbnail"].compactMap { done["images"]?[$0]?.stringValue.map { String($0.dropFirst("media/".count)) } }
        XCTAssertEqual(newImages.count, 2, "\(done)")
        for image in newImages { XCTAssertTrue(image.hasPrefix("images-\(newHash.prefix(12))/tr-1/"), image) }
        XCTAssertEqual(
            h.mediaFiles(), ([newFile.relativePath] + newImages).sorted(),
            "the old file and images are deleted after the swap, nothing else is left")
        let finalState = try await h.call("offline.state", ["productId": "tr-1"])
        XCTAssertEqual(finalState["state"]?.stringValue, "OFFLINED_AND_VALID")
        print("re-offline: \(oldFile.relativePath) → \(newFile.relativePath) across a kill -9, files now \(h.mediaFiles())")
        await events.close()
    }

    /// A kill after the committer verified the new file but before the swap's transaction: the
    /// next start finishes the swap before it answers anything.
    func testASwapCutOffAfterTheFileCommitFinishesAtStart() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        let (token, _) = try await h.startAndOffline("tr-1")
        let oldLookup = try await playable(h, "tr-1")
        let oldFile = try XCTUnwrap(oldLookup)
        _ = try await h.api.post("/_control/redeliver", ["productId": "tr-1", "trackId": "tr-2"], authorized: false)
        let info = try h.api.json(try await h.api.get("/v1/playbackinfo/tr-1?mode=offline"))
        let manifest = info.object("manifest")
        let newPath = try XCTUnwrap(manifest["url"] as? String)
        try await h.api.injectFaults(newPath, Array(repeating: ["bytesPerSecond": 1_000], count: 20))
        try await h.setServerClock(offset: 2 * day)
        let round = try await h.call("sync.now")
        XCTAssertEqual(outcome(round, token)?["result"]?.stringValue, "staged", "\(round)")
        // tr-1's images are staged with the new file (and arrive at once): the swap waits for them too.
        let pool = try h.catalogPool()
        let stagedImagesVerified = { () throws -> Bool in
            try pool.read { db in
                try Int.fetchOne(
                    db,
                    sql: """
                        SELECT COUNT(*) FROM offlineProducts p, json_each(p.staged, '$.files') s JOIN files f ON f.id = json_extract(s.value, '$.fileId')
                        WHERE p.token = ? AND f.state = 'verified'
                        """, arguments: [token]) == 2
            }
        }
        try await waitUntil("tr-1's staged images verified") { try stagedImagesVerified() }
        h.kill9()

        // What the committer leaves when killed right after its transaction: the new file under
        // its final name, verified in the catalog, and the product not switched yet.
        let staged = try pool.read { db in
            try Row.fetchOne(
                db,
                sql: """
                    SELECT f.id, f.localPath FROM files f JOIN offlineProducts p ON f.id = json_extract(p.staged, '$.fileId')
                    WHERE p.token = ?
                    """, arguments: [token])
        }
        let stagedRow = try XCTUnwrap(staged)
        let relative: String = stagedRow["localPath"]
        let stagedId: Int64 = stagedRow["id"]
        let bytes = try Data(contentsOf: h.origin.dataDirectory.appendingPathComponent(String(newPath.dropFirst())))
        try bytes.write(to: URL(fileURLWithPath: h.mediaDir + "/" + relative))
        try? FileManager.default.removeItem(atPath: h.mediaDir + "/" + relative + ".part")
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE files SET state = 'verified', bytesOnDisk = sizeBytes, completedAt = ? WHERE id = ?",
                arguments: [Date(), stagedId])
            try db.execute(sql: "UPDATE downloads SET state = 'done' WHERE fileId = ?", arguments: [stagedId])
        }
        _ = try await h.api.delete("/_control/faults")
        // The origin refuses re-validation now: only the start's recovery can finish the swap.
        try await h.api.injectFaults("/v1/playbackinfo/", Array(repeating: ["status": 503], count: 20))

        try h.start()
        let status = try await h.call("offline.status", ["token": .string(token)])
        XCTAssertEqual(status["manifestHash"]?.stringValue, info["manifestHash"] as? String, "swapped at start: \(status)")
        XCTAssertEqual(status["staged"], nil)
        let newLookup = try await playable(h, "tr-1")
        XCTAssertEqual(newLookup?.relativePath, relative)
        let newImages = ["poster", "thumbnail"].compactMap { status["images"]?[$0]?.stringValue.map { String($0.dropFirst("media/".count)) } }
        XCTAssertEqual(newImages.count, 2, "\(status)")
        XCTAssertEqual(h.mediaFiles(), ([relative] + newImages).sorted(), "the old file and images went with the swap")
        XCTAssertTrue(newImages.allSatisfy { $0.hasPrefix("images-") }, "\(newImages)")
        print("swap at start: \(oldFile.relativePath) → \(relative)")
    }

    /// Background rounds keep to the download policy (TIDAL: re-validation over cellular only
    /// where offlining over cellular is allowed); they start again when the network allows.
    func testPeriodicRoundsWaitForANetworkThePolicyAllows() async throws {
        let h = try DownloaderHarness(config: #"{"downloader":{"revalidateIntervalSeconds":1}}"#)
        defer { h.discard() }
        let (token, _) = try await h.startAndOffline("tr-1")
        _ = try await h.call("network.set", ["type": "cellular"])
        try await h.setServerClock(offset: 2 * day)
        _ = try await h.call("stations.list") // the server's time reaches the downloader
        try await Task.sleep(nanoseconds: 4_000_000_000)
        let held = try await h.call("offline.status", ["token": .string(token)])
        XCTAssertEqual(held["revalidatedAt"], .null, "no round on cellular without allowCellular: \(held)")

        _ = try await h.call("network.set", ["type": "wifi"])
        var status = held
        let deadline = Date().addingTimeInterval(20)
        while status["revalidatedAt"] == .null, Date() < deadline {
            try await Task.sleep(nanoseconds: 250_000_000)
            status = try await h.call("offline.status", ["token": .string(token)])
        }
        XCTAssertNotEqual(status["revalidatedAt"], .null, "a round ran once Wi-Fi came: \(status)")
        print("policy-gated re-validation: none on cellular, revalidatedAt \(status["revalidatedAt"]?.stringValue ?? "-") on Wi-Fi")
    }
}
