import Foundation
import Glibc
import TestSupport
import Wire
import XCTest

/// A small real file system (a tmpfs mounted as the media folder) fills up: CacheLimit with
/// what is missing, nothing partial promoted, recovery once space is freed — before an item
/// starts and while it is being written.
final class StorageLimitTests: XCTestCase {
    func testSmallFileSystemFillsUpAndRecovers() async throws {
        guard getuid() == 0 else { throw XCTSkip("mounting a tmpfs needs root") }
        let h = try DownloaderHarness()
        try FileManager.default.createDirectory(atPath: h.mediaDir, withIntermediateDirectories: true)
        guard PolicyTest.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0750", "tmpfs", h.mediaDir]) == 0 else {
            h.discard()
            throw XCTSkip("cannot mount a tmpfs here")
        }
        defer {
            h.kill9()
            PolicyTest.run(["umount", "-l", h.mediaDir])
            h.discard()
        }
        try h.start()
        let minFree = 256 << 10
        _ = try await h.call("policy.set", ["minFreeBytes": .number(Double(minFree))])
        _ = try await h.call("network.set", ["type": "wifi"])
        let first = try await PolicyTest.product(h.origin.baseURL, "tr-1")
        let filler = h.mediaDir + "/filler"

        // 1. Before the item starts: leave less than its size above minFreeBytes.
        try fill(filler, leaving: minFree + first.size / 2, of: h.mediaDir)
        let estimate = try await h.call("offline.estimate", ["productId": "tr-1"])
        XCTAssertEqual(estimate["fits"]?.boolValue, false)
        XCTAssertGreaterThanOrEqual(estimate["bytesNeeded"]?.intValue ?? 0, first.size)
        XCTAssertLessThan(estimate["bytesAvailable"]?.intValue ?? .max, first.size)
        let token = try PolicyTest.token(try await h.call("offline.add", ["productId": "tr-1"]))
        // tr-1's images are small enough to fit and may come first; the product then waits for
        // its file with CacheLimit.
        try await waitUntil("tr-1 idle with CacheLimit", timeout: 10) {
            let status = try await h.status(token)
            return status["state"]?.stringValue == "idle" && status["error"]?.stringValue == "CacheLimit"
        }
        let refused = try await h.status(token)
        XCTAssertEqual(refused["state"]?.stringValue, "idle")
        XCTAssertEqual(refused["error"]?.stringValue, "CacheLimit")
        let reason = refused["reason"]?.stringValue ?? ""
        XCTAssertTrue(reason.hasPrefix("needs ") && reason.contains("more"), reason)
        print("storage: CacheLimit before start: \(reason)")
        XCTAssertFalse(h.mediaFiles().contains { $0.hasPrefix("tracks/") }, "something was written: \(h.mediaFiles())")

        // Space freed: it starts by itself and completes.
        try FileManager.default.removeItem(atPath: filler)
        let recovered = try await waitUntil("recovery after space was freed", timeout: 30) {
            try await h.status(token)["state"]?.stringValue == "cached"
        }
        XCTAssertEqual(try sha256(ofFile: h.mediaDir + "/tracks/" + PolicyTest.fileName(first.url)), first.sha256)

        // 2. While writing: the disk fills up under a slow download (other software writes).
        try await h.api.injectFaults("/media/", [["bytesPerSecond": 40_000, "repeat": 1]])
        let second = try await PolicyTest.product(h.origin.baseURL, "tr-7b")
        let secondPart = h.mediaDir + "/tracks/" + PolicyTest.fileName(second.url) + ".part"
        let token2 = try PolicyTest.token(try await h.call("offline.add", ["productId": "tr-7b"]))
        try await waitUntil("bytes in the .part") { PolicyTest.fileSize(secondPart) > 20_000 }
        try fill(filler, leaving: 0, of: h.mediaDir)
        let stoppedIn = try await waitUntil("CacheLimit while writing", timeout: 10) {
            let s = try await h.status(token2)
            return s["state"]?.stringValue == "idle" && s["error"]?.stringValue == "CacheLimit"
        }
        try await waitUntil("transfer stopped", timeout: 5) { try await h.activeDownloads() == 0 }
        let final2 = h.mediaDir + "/tracks/" + PolicyTest.fileName(second.url)
        XCTAssertFalse(FileManager.default.fileExists(atPath: final2), "a partial file was promoted")
        let state2 = try await h.status(token2)["state"]?.stringValue
        XCTAssertNotEqual(state2, "cached")
        XCTAssertEqual(
            try sha256(ofFile: h.mediaDir + "/tracks/" + PolicyTest.fileName(first.url)), first.sha256,
            "the full disk damaged a verified file")
        let reason2 = try await h.status(token2)["reason"]?.stringValue ?? ""
        print("storage: disk filled while writing → CacheLimit after \(String(format: "%.2f", stoppedIn)) s: \(reason2)")

        try FileManager.default.removeItem(atPath: filler)
        _ = try await h.api.delete("/_control/faults")
        _ = try await h.waitProduct(token2, state: "cached", timeout: 30)
        XCTAssertEqual(try sha256(ofFile: final2), second.sha256)
        let counts = try await PolicyTest.mediaCounts(h.origin.baseURL, PolicyTest.fileName(second.url))
        print(
            "storage: recovered in \(String(format: "%.2f", recovered)) s after freeing; second file resumed with \(counts.ranged) Range answer(s), \(counts.full) full"
        )
        XCTAssertFalse(h.mediaFiles().contains { $0.hasSuffix(".part") })
    }

    /// Writes `path` until the file system has about `leaving` bytes free (0: until ENOSPC).
    private func fill(_ path: String, leaving: Int, of directory: String) throws {
        var info = statvfs()
        guard statvfs(directory, &info) == 0 else { throw OriginTestError("statvfs failed") }
        let free = Int(info.f_bavail) * Int(info.f_frsize)
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        guard fd >= 0 else { throw OriginTestError("cannot create the filler") }
        defer { close(fd) }
        var left = leaving == 0 ? Int.max : max(0, free - leaving)
        let chunk = [UInt8](repeating: 0x5a, count: 64 << 10)
        while left > 0 {
            let n = chunk.withUnsafeBytes { write(fd, $0.baseAddress, min(left, chunk.count)) }
            if n <= 0 { break }
            left -= n
        }
    }
}
