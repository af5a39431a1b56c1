import Foundation
import GRDB
import StateDB
import TestSupport
import Wire
import XCTest

/// A progressive product's poster and thumbnail (`images` of its offline playbackinfo) through
/// the socket, against the reference origin's `tr-1`: offlined with the file as the product's
/// own files, counted by `offline.status` and `offline.estimate`, moved by a re-offline and
/// removed with the product.
final class ProgressiveImagesTests: XCTestCase {
    let day = 86_400.0

    /// The origin's images of `productId` as its offline playbackinfo names them: kind → (URL path, bytes).
    private func originImages(_ h: DownloaderHarness, _ productId: String) async throws -> [String: (path: String, bytes: Data)] {
        let info = try h.api.json(try await h.api.get("/v1/playbackinfo/\(productId)?mode=offline"))
        var images: [String: (String, Data)] = [:]
        for (kind, value) in info.object("images") {
            let path = try XCTUnwrap(value as? String)
            images[kind] = (path, try Data(contentsOf: h.origin.dataDirectory.appendingPathComponent(String(path.dropFirst()))))
        }
        return images
    }

    /// The size the origin's offline playbackinfo declares for the product's file.
    private func fileSize(_ h: DownloaderHarness, _ productId: String) async throws -> Int {
        let info = try h.api.json(try await h.api.get("/v1/playbackinfo/\(productId)?mode=offline"))
        return try XCTUnwrap((info.object("manifest")["sizeBytes"] as? NSNumber)?.intValue)
    }

    /// The status's `images` hold both kinds, each file on disk byte for byte the origin's.
    private func assertImages(
        _ status: JSONValue, equal origin: [String: (path: String, bytes: Data)], _ h: DownloaderHarness,
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> [String] {
        var paths: [String] = []
        for kind in ["poster", "thumbnail"] {
            let path = try XCTUnwrap(status["images"]?[kind]?.stringValue, "\(kind) in \(status)", file: file, line: line)
            XCTAssertTrue(path.hasPrefix("media/"), path, file: file, line: line)
            let onDisk = try Data(contentsOf: URL(fileURLWithPath: h.dir.stateDir + "/" + path))
            XCTAssertEqual(onDisk, origin[kind]?.bytes, "\(path) is the origin's \(kind)", file: file, line: line)
            paths.append(String(path.dropFirst("media/".count)))
        }
        return paths
    }

    func testImagesAreOfflinedCountedAndDeletedWithTheFile() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        let images = try await originImages(h, "tr-1")
        XCTAssertEqual(Set(images.keys), ["poster", "thumbnail"], "the reference origin's tr-1 has both")
        let total = try await fileSize(h, "tr-1") + images.values.reduce(0) { $0 + $1.bytes.count }

        // The estimate counts what offline.add downloads: the file and its images, which only
        // their GET will size (the origin is asked nothing else): until then a poster counts
        // for 32 KiB and a thumbnail for 4 KiB (docs/protocol.md).
        let estimate = try await h.call("offline.estimate", ["productId": "tr-1"])
        let weighed = try XCTUnwrap(estimate["items"]?.arrayValue?.first)
        XCTAssertEqual(weighed["canBeDownloaded"]?.boolValue, true)
        let guessed = try await fileSize(h, "tr-1") + 32_768 + 4_096
        XCTAssertEqual(weighed["sizeBytes"]?.intValue, guessed, "\(estimate)")
        XCTAssertEqual(weighed["sizeKnown"]?.boolValue, false)
        XCTAssertEqual(weighed["onDiskBytes"]?.intValue, 0)
        XCTAssertGreaterThanOrEqual(weighed["neededBytes"]?.intValue ?? 0, guessed, "three files, counted in blocks: \(estimate)")

        let added = try await h.call("offline.add", ["productId": "tr-1"])
        let token = try XCTUnwrap(added["token"]?.stringValue)
        let cached = try await h.waitProduct(token, state: "cached")
        XCTAssertEqual(cached["sizeBytes"]?.intValue, total, "the product's size counts its images: \(cached)")
        XCTAssertEqual(cached["sizeKnown"]?.boolValue, true)
        XCTAssertEqual(cached["bytesOnDisk"]?.intValue, total)
        XCTAssertEqual(cached["progress"]?.intValue, 100)
        let paths = try assertImages(cached, equal: images, h)
        for (kind, path) in zip(["poster", "thumbnail"], paths) {
            XCTAssertTrue(path.hasPrefix("images/tr-1/\(kind)."), path)
        }
        let files = h.mediaFiles()
        XCTAssertEqual(files.count, 3, "the file and two images: \(files)")
        XCTAssertEqual(Set(files.filter { $0.hasPrefix("images/") }), Set(paths))
        let listed = try await h.call("offline.list")
        XCTAssertEqual(listed["items"]?.arrayValue?.first?["images"], cached["images"], "offline.list shows them as offline.status does")

        // Once offlined, nothing more is needed; a second estimate finds all three on disk.
        let again = try await h.call("offline.estimate", ["productId": "tr-1"])
        let held = try XCTUnwrap(again["items"]?.arrayValue?.first)
        XCTAssertEqual(held["sizeBytes"]?.intValue, total, "the sizes the GETs told are known now")
        XCTAssertEqual(held["sizeKnown"]?.boolValue, true)
        XCTAssertEqual(held["onDiskBytes"]?.intValue, total, "\(again)")
        XCTAssertEqual(held["neededBytes"]?.intValue, 0)

        // Deleting the product removes its images with its file.
        let deleted = try await h.call("offline.delete", ["token": .string(token)])
        XCTAssertEqual(deleted["state"]?.stringValue, "deleted")
        XCTAssertEqual(h.mediaFiles(), [], "nothing of tr-1 is left")
        print(
            "progressive images: tr-1 = file + \(paths), \(total) bytes, estimate \(weighed["neededBytes"]?.intValue ?? -1) needed, delete leaves \(h.mediaFiles())"
        )
    }

    /// The progress a client follows is the status's: while the file arrives slowly, every
    /// `OfflineProgress` counts the images with it (size and bytes over the three files), so the
    /// events and `offline.status` never disagree on how far the product is. An image whose GET
    /// has not told its size yet counts for an estimate (`sizeKnown` false, `progress` short of
    /// 100); once both are verified the size is exact.
    func testProgressEventsCountTheImagesAsTheStatusDoes() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        let images = try await originImages(h, "tr-1")
        let total = try await fileSize(h, "tr-1") + images.values.reduce(0) { $0 + $1.bytes.count }
        let client = try await h.client()
        defer { Task { await client.close() } }
        _ = try await client.call("events.subscribe", ["topics": ["downloads"]])
        let events = EventCollector(client)
        try await h.api.injectFaults("/media/", [["bytesPerSecond": 40_000, "repeat": 1]])

        let added = try await h.call("offline.add", ["productId": "tr-1"])
        let token = try XCTUnwrap(added["token"]?.stringValue)
        let cached = try await h.waitProduct(token, state: "cached", timeout: 60)
        XCTAssertEqual(cached["sizeBytes"]?.intValue, total)
        let progress = events.of("OfflineProgress").filter { $0.data["token"]?.stringValue == token }.map(\.data)
        XCTAssertGreaterThanOrEqual(progress.count, 2, "the slow file was reported as it arrived: \(progress)")
        let known = progress.filter { $0["sizeKnown"]?.boolValue == true }
        XCTAssertFalse(known.isEmpty, "the images were verified while the file arrived: \(progress)")
        XCTAssertEqual(
            known.compactMap { $0["sizeBytes"]?.intValue }, Array(repeating: total, count: known.count),
            "every event counts the file and its images: \(progress)")
        let file = try await fileSize(h, "tr-1")
        let bytes = progress.compactMap { $0["bytesOnDisk"]?.intValue }
        XCTAssertEqual(bytes, bytes.sorted(), "bytes only grow: \(bytes)")
        XCTAssertLessThan(bytes.last ?? total, total, "reported before the product was complete")
        for event in progress {
            let onDisk = event["bytesOnDisk"]?.intValue ?? -1
            let size = event["sizeBytes"]?.intValue ?? 0
            XCTAssertEqual(event["files"]?["total"]?.intValue, 3, "\(event)")
            if event["sizeKnown"]?.boolValue == true {
                XCTAssertEqual(event["progress"]?.intValue, onDisk * 100 / total, "\(event)")
            } else {
                XCTAssertGreaterThan(size, file, "the file and an estimate for the images: \(event)")
                XCTAssertEqual(event["progress"]?.intValue, min(99, onDisk * 100 / size), "\(event)")
            }
        }
    }

    func testAReOfflineMovesTheImagesWithTheFile() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        let (token, before) = try await h.startAndOffline("tr-1")
        let images = try await originImages(h, "tr-1")
        let oldPaths = try assertImages(before, equal: images, h)
        let oldHash = try XCTUnwrap(before["manifestHash"]?.stringValue)

        // The label redelivers tr-1 (tr-2's file now); the images stay the product's.
        let redeliver = try await h.api.post("/_control/redeliver", ["productId": "tr-1", "trackId": "tr-2"], authorized: false)
        XCTAssertEqual(redeliver.status, 200)
        let info = try h.api.json(try await h.api.get("/v1/playbackinfo/tr-1?mode=offline"))
        let newHash = try XCTUnwrap(info["manifestHash"] as? String)
        XCTAssertNotEqual(newHash, oldHash)
        let newTotal = try await fileSize(h, "tr-1") + images.values.reduce(0) { $0 + $1.bytes.count }

        try await h.setServerClock(offset: 2 * day)
        let round = try await h.call("sync.now")
        let result = round["revalidated"]?.arrayValue?.first { $0["token"]?.stringValue == token }?["result"]?.stringValue
        XCTAssertTrue(["staged", "replaced"].contains(result ?? ""), "\(round)")
        let done = try await h.statusOnceSwapped(token, to: newHash)
        XCTAssertEqual(done["manifestHash"]?.stringValue, newHash, "\(done)")
        XCTAssertEqual(done["state"]?.stringValue, "cached")
        XCTAssertEqual(done["staged"], nil)
        XCTAssertEqual(done["sizeBytes"]?.intValue, newTotal)
        XCTAssertEqual(done["bytesOnDisk"]?.intValue, newTotal)

        // The product points at the images staged with the new file; the held ones are gone.
        let newPaths = try assertImages(done, equal: images, h)
        XCTAssertTrue(Set(newPaths).isDisjoint(with: oldPaths), "\(oldPaths) → \(newPaths)")
        for path in newPaths { XCTAssertTrue(path.hasPrefix("images-") && path.contains("/tr-1/"), path) }
        let pool = try h.catalogPool()
        let mainPath = try await pool.read { db in try OfflineAvailability.localFile(productId: "tr-1", db: db)?.relativePath }
        XCTAssertEqual(h.mediaFiles(), ([try XCTUnwrap(mainPath)] + newPaths).sorted(), "only the new file and images are left")

        // The swapped images are found by their URLs again: nothing more to download.
        let estimate = try await h.call("offline.estimate", ["productId": "tr-1"])
        let held = try XCTUnwrap(estimate["items"]?.arrayValue?.first)
        XCTAssertEqual(held["onDiskBytes"]?.intValue, newTotal, "\(estimate)")
        XCTAssertEqual(held["neededBytes"]?.intValue, 0)

        _ = try await h.call("offline.delete", ["token": .string(token)])
        XCTAssertEqual(h.mediaFiles(), [], "delete removes the moved images too")
        print("re-offline with images: \(oldPaths) → \(newPaths)")
    }

    /// A re-offline an earlier version staged for a progressive product names no files besides
    /// the main one (`files` absent): its swap moves the main file, and the images the product
    /// holds stay its own and wanted.
    func testARevisionStagedWithoutFilesStillSwaps() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        let (token, before) = try await h.startAndOffline("tr-1")
        let images = try await originImages(h, "tr-1")
        let heldPaths = try assertImages(before, equal: images, h)
        _ = try await h.api.post("/_control/redeliver", ["productId": "tr-1", "trackId": "tr-2"], authorized: false)
        let info = try h.api.json(try await h.api.get("/v1/playbackinfo/tr-1?mode=offline"))
        let newHash = try XCTUnwrap(info["manifestHash"] as? String)
        let newPath = try XCTUnwrap(info.object("manifest")["url"] as? String)
        try await h.api.injectFaults(newPath, Array(repeating: ["bytesPerSecond": 1_000], count: 20))
        try await h.setServerClock(offset: 2 * day)
        _ = try await h.call("sync.now")
        h.kill9()

        // What an earlier version wrote: the staged revision without `files`, and no staged images.
        let pool = try h.catalogPool()
        let stagedImages = try await pool.write { db -> [String] in
            let text = try XCTUnwrap(try String.fetchOne(db, sql: "SELECT staged FROM offlineProducts WHERE token = ?", arguments: [token]))
            var staged = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            let files = try XCTUnwrap(staged.removeValue(forKey: "files") as? [[String: Any]])
            let ids = files.compactMap { ($0["fileId"] as? NSNumber)?.int64Value }
            XCTAssertEqual(ids.count, 2, "this version stages both images: \(text)")
            let paths = try String.fetchAll(db, sql: "SELECT localPath FROM files WHERE id IN (\(ids.map(String.init).joined(separator: ",")))")
            for id in ids {
                try db.execute(sql: "DELETE FROM downloads WHERE fileId = ?", arguments: [id])
                try db.execute(sql: "DELETE FROM files WHERE id = ?", arguments: [id])
            }
            let legacy = String(decoding: try JSONSerialization.data(withJSONObject: staged), as: UTF8.self)
            try db.execute(sql: "UPDATE offlineProducts SET staged = ? WHERE token = ?", arguments: [legacy, token])
            return paths
        }
        for path in stagedImages {
            try? FileManager.default.removeItem(atPath: h.mediaDir + "/" + path)
            try? FileManager.default.removeItem(atPath: h.mediaDir + "/" + path + ".part")
        }
        _ = try await h.api.delete("/_control/faults")

        try h.start()
        let done = try await h.statusOnceSwapped(token, to: newHash)
        XCTAssertEqual(done["manifestHash"]?.stringValue, newHash, "the legacy revision swapped: \(done)")
        XCTAssertEqual(done["state"]?.stringValue, "cached")
        XCTAssertEqual(done["staged"], nil)
        XCTAssertEqual(try assertImages(done, equal: images, h), heldPaths, "the held images stay the product's")
        let mainPath = try await pool.read { db in try OfflineAvailability.localFile(productId: "tr-1", db: db)?.relativePath }
        XCTAssertEqual(h.mediaFiles(), ([try XCTUnwrap(mainPath)] + heldPaths).sorted(), "the old file went, the held images stayed")
        let wanted = try await pool.read { db in
            try Int.fetchOne(
                db,
                sql: """
                    SELECT COUNT(*) FROM downloads d JOIN productFiles pf ON pf.fileId = d.fileId WHERE d.ownerId = ? AND pf.productId = 'tr-1'
                    """, arguments: [token])
        }
        XCTAssertEqual(wanted, 2, "the token still wants the held images")
        _ = try await h.call("offline.delete", ["token": .string(token)])
        XCTAssertEqual(h.mediaFiles(), [])
    }

    /// Nothing is asked of an image before its download (no `HEAD`: its `GET` tells its size),
    /// so an image the origin refuses does not refuse the product at `offline.add` or in
    /// `offline.estimate`: its download fails as a segment's would, failing the product with the
    /// image named, and `offline.resume` completes it once the origin serves it; the same for a
    /// presentation's image.
    func testAnImageTheOriginRefusesFailsTheProductNamingIt() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        let images = try await originImages(h, "tr-1")
        let poster = try XCTUnwrap(images["poster"]?.path)
        let info = try h.api.json(try await h.api.get("/v1/playbackinfo/vid-1?mode=offline"))
        let vidPoster = try XCTUnwrap(info.object("images")["poster"] as? String)
        for (productId, path) in [("tr-1", poster), ("vid-1", vidPoster)] {
            try await h.api.injectFaults(path, [["status": 404, "repeat": 20]])
            let estimate = try await h.call("offline.estimate", ["productId": .string(productId)])
            let weighed = try XCTUnwrap(estimate["items"]?.arrayValue?.first)
            XCTAssertEqual(weighed["canBeDownloaded"]?.boolValue, true, "\(estimate)")
            let added = try await h.call("offline.add", ["productId": .string(productId)])
            let token = try XCTUnwrap(added["token"]?.stringValue)
            let failed = try await h.waitProduct(token, state: "failed", timeout: 60)
            XCTAssertEqual(failed["error"]?.stringValue, "DownloadFailed", "\(failed)")
            let reason = try XCTUnwrap(failed["reason"]?.stringValue)
            XCTAssertTrue(reason.hasPrefix("images/poster.png: NotFound"), reason)
            XCTAssertNil(failed["images"]?["poster"], "\(failed)")

            _ = try await h.api.delete("/_control/faults")
            _ = try await h.call("offline.resume", ["token": .string(token)])
            let cached = try await h.waitProduct(token, state: "cached", timeout: 60)
            XCTAssertNotNil(cached["images"]?["poster"], "\(cached)")
            print("progressive images: \(productId) failed as \(reason.prefix(60))…, resume completes it")
        }
    }
}
