import Foundation
import TestSupport
import Wire
import XCTest

/// Crashes: `Range` resume seen at the origin after kill -9, and 20 kills during a sync.
final class KillResumeTests: XCTestCase {
    func testKilledMidFileResumesWithRange() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        try await h.api.injectFaults("/media/", [["bytesPerSecond": 40_000, "repeat": 3]])
        try h.start()
        _ = try await h.call("stations.sync", ["stationId": "st-10"])
        // Wait for bytes in a .part, then kill -9.
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline,
            !h.mediaFiles().contains(where: {
                $0.hasSuffix(".part") && ((try? FileManager.default.attributesOfItem(atPath: h.mediaDir + "/" + $0)[.size] as? Int) ?? 0) > 20_000
            })
        {
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        h.kill9()
        XCTAssertTrue(h.mediaFiles().contains { $0.hasSuffix(".part") })
        _ = try await h.api.delete("/_control/faults")
        try h.start()
        try await h.waitStationComplete("st-10")
        let stats = try await h.mediaStats()
        XCTAssertGreaterThan(stats.ranged.values.reduce(0, +), 0, "no Range request reached the origin: \(stats)")
        XCTAssertTrue(stats.full.values.allSatisfy { $0 <= 1 }, "a file was downloaded twice in full: \(stats.full)")
        for (_, entry) in try await h.manifest("st-10") {
            XCTAssertEqual(try sha256(ofFile: h.mediaDir + "/" + localName(entry.url)), entry.sha256)
        }
    }

    func testTwentyKillsDuringSyncLoseNothing() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        try await h.api.injectFaults("/media/", [["bytesPerSecond": 60_000, "repeat": 10_000]])
        try h.start()
        for station in ["st-9", "st-10", "st-11"] {
            _ = try await h.call("stations.sync", ["stationId": .string(station)])
        }
        var kills = 0
        var generator = SystemRandomNumberGenerator()
        while kills < 20 {
            try await Task.sleep(nanoseconds: UInt64.random(in: 150_000_000...450_000_000, using: &generator))
            h.kill9()
            kills += 1
            try h.start()
        }
        _ = try await h.api.delete("/_control/faults")
        for station in ["st-9", "st-10", "st-11"] { try await h.waitStationComplete(station, timeout: 90) }
        try h.stop()

        var checked = 0
        for station in ["st-9", "st-10", "st-11"] {
            for (_, entry) in try await h.manifest(station) {
                XCTAssertEqual(try sha256(ofFile: h.mediaDir + "/" + localName(entry.url)), entry.sha256, entry.url)
                checked += 1
            }
        }
        let leftovers = h.mediaFiles().filter { $0.hasSuffix(".part") }
        let stats = try await h.mediaStats()
        let twice = stats.full.filter { $0.value > 1 }
        print(
            "kill loop: \(kills) kills, \(checked) files sha256-checked, \(leftovers.count) temp files left, "
                + "\(twice.count) files downloaded twice in full, \(stats.ranged.values.reduce(0, +)) Range answers, full bodies \(stats.full.values.reduce(0, +))"
        )
        XCTAssertEqual(kills, 20)
        XCTAssertEqual(checked, 9)
        XCTAssertEqual(leftovers, [])
        XCTAssertEqual(twice, [:], "downloaded twice in full")
    }
}
