import Foundation
import TestSupport
import Wire
import XCTest

/// Stations over the socket against the reference origin: complete and incremental sync,
/// local-offline answers with the origin gone, a file deleted by hand found at start.
final class StationSyncTests: XCTestCase {
    func testSyncCompletelyThenIncrementallyAndListOffline() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        try h.start()
        let client = try await h.client()
        _ = try await client.call("events.subscribe", ["topics": ["downloads", "network"]])
        let result = try await client.call("stations.sync", ["stationId": "st-9"])
        XCTAssertEqual(result["total"]?.intValue, 3)
        XCTAssertEqual(result["added"]?.arrayValue?.count, 3)
        try await h.waitStationComplete("st-9")

        let manifest = try await h.manifest("st-9")
        for (_, entry) in manifest {
            XCTAssertEqual(try sha256(ofFile: h.mediaDir + "/" + localName(entry.url)), entry.sha256)
        }
        XCTAssertFalse(h.mediaFiles().contains { $0.hasSuffix(".part") })
        var sawComplete = false
        for await event in client.events where event.type == "StationDownloadComplete" {
            XCTAssertEqual(event.data["stationId"]?.stringValue, "st-9")
            XCTAssertEqual(event.data["pending"]?.intValue, 0)
            sawComplete = true
            break
        }
        XCTAssertTrue(sawComplete)

        // Incremental: nothing new, nothing fetched again.
        let before = try await h.mediaStats()
        let again = try await client.call("stations.sync", ["stationId": "st-9"])
        XCTAssertEqual(again["added"]?.arrayValue?.count, 0)
        XCTAssertEqual(again["pending"]?.intValue, 0)
        try await Task.sleep(nanoseconds: 300_000_000)
        let after = try await h.mediaStats()
        XCTAssertEqual(before.full, after.full, "a verified file was downloaded again")
        await client.close()

        // localOffline answers from the catalog with the origin gone.
        h.origin.stop()
        let list = try await h.call("stations.list")
        XCTAssertEqual(list["available"]?.boolValue, false)
        XCTAssertEqual(list["localOffline"]?.arrayValue?.first?["id"]?.stringValue, "st-9")
    }

    func testFileDeletedByHandIsFoundAtStartAndFetchedAgain() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        try h.start()
        _ = try await h.call("stations.sync", ["stationId": "st-11"])
        try await h.waitStationComplete("st-11")
        try h.stop()

        let victim = try XCTUnwrap(h.mediaFiles().first)
        try FileManager.default.removeItem(atPath: h.mediaDir + "/" + victim)
        try Data("stray".utf8).write(to: URL(fileURLWithPath: h.mediaDir + "/tracks/stray.bin"))
        let fullBefore = try await h.mediaStats().full

        try h.start()
        try await h.waitStationComplete("st-11")
        XCTAssertTrue(FileManager.default.fileExists(atPath: h.mediaDir + "/" + victim))
        XCTAssertFalse(FileManager.default.fileExists(atPath: h.mediaDir + "/tracks/stray.bin"), "unknown file kept")
        let manifest = try await h.manifest("st-11")
        let entry = try XCTUnwrap(manifest.values.first { localName($0.url) == victim })
        XCTAssertEqual(try sha256(ofFile: h.mediaDir + "/" + victim), entry.sha256)
        let fullAfter = try await h.mediaStats().full
        XCTAssertEqual(fullAfter[entry.url, default: 0], fullBefore[entry.url, default: 0] + 1)
        XCTAssertTrue(h.service!.log.contains("missing or has the wrong size"))
    }
}
