import Foundation
import GRDB
import TestSupport
import Wire
import XCTest

/// A stalled transfer never blocks the others (docs/configuration.md, "Slow transfers"): five
/// files whose server misbehaves are queued first, and the first three take the three slots —
/// one server accepts and sends nothing, one sends the headers and nothing, one trickles at
/// 1 byte a second; the fourth sends 64 KiB then nothing, the fifth comes at 1 kB/s once (far
/// below the others, above the floor) — and a healthy station queued behind them still
/// downloads, every file of it within a bound far below the 90 s the stalls held the slots
/// before; its progress never stops for long. Once the server is healthy again the stalled
/// files complete by themselves (the one cut off resumed with `Range`), verified. On one core
/// (`taskset -c 0`) and on all of them.
final class StalledTransferTests: XCTestCase {
    static let faulty = "st-stall"
    static let healthy = "st-ok"
    static let healthyFiles = 48
    /// All the healthy station's files are verified within this many seconds of its sync.
    static let healthyBound = 45.0
    /// The healthy station's progress (one more file verified) never pauses longer than this.
    static let longestPause = 25.0

    func testStalledFilesGiveWayOnOneCore() async throws {
        try await stallsGiveWay(.oneCore)
    }

    func testStalledFilesGiveWayOnAllCores() async throws {
        try await stallsGiveWay(.allCores)
    }

    private func stallsGiveWay(_ setting: CoreSetting) async throws {
        let h = try DownloaderHarness(synthetic: ["\(Self.faulty)=5x256k", "\(Self.healthy)=\(Self.healthyFiles)x128k"])
        defer { h.discard() }
        let faulty = try await h.manifest(Self.faulty)
        let healthy = try await h.manifest(Self.healthy)
        XCTAssertEqual(faulty.count, 5)
        XCTAssertEqual(healthy.count, Self.healthyFiles)
        let paths = faulty.keys.sorted().map { Self.path(of: faulty[$0]!.url) }
        // In queue order: the first three take the three slots.
        try await h.api.injectFaults(paths[0], [["delayMs": 120_000, "repeat": 1_000]])
        try await h.api.injectFaults(paths[1], [["stallAfter": 0, "repeat": 1_000]])
        try await h.api.injectFaults(paths[2], [["bytesPerSecond": 1, "repeat": 1_000]])
        try await h.api.injectFaults(paths[3], [["stallAfter": 65_536, "repeat": 1_000]])
        try await h.api.injectFaults(paths[4], [["bytesPerSecond": 1_000]])
        // The healthy files take about 0.65 s each, so that they still wait once the slow files
        // were watched for a whole window.
        try await h.api.injectFaults("/media/synthetic/\(Self.healthy)-", [["bytesPerSecond": 200_000, "repeat": 1_000]])

        try await h.startOnline(on: setting)
        let began = Date()
        _ = try await h.call("stations.sync", ["stationId": .string(Self.faulty)])
        _ = try await h.call("stations.sync", ["stationId": .string(Self.healthy)])

        // Watch the healthy station's verified count, and the faulty files' reasons, until it completes.
        let pool = try h.catalogPool()
        var verified = 0
        var lastProgress = began
        var longestPause = 0.0
        var reasons: Set<String> = []
        while verified < Self.healthyFiles {
            let elapsed = Date().timeIntervalSince(began)
            guard elapsed < Self.healthyBound else {
                throw OriginTestError(
                    "\(verified) of \(Self.healthyFiles) healthy files verified after \(Int(elapsed)) s; "
                        + "faulty files: \(reasons.sorted())\n\(h.service?.log.suffix(4000) ?? "")")
            }
            let (count, faultyRows) = try await pool.read { db in
                (
                    try Int.fetchOne(
                        db, sql: "SELECT count(*) FROM files WHERE urlPath LIKE ? AND state = 'verified'",
                        arguments: ["%/\(Self.healthy)-%"]) ?? 0,
                    try Row.fetchAll(db, sql: "SELECT error, reason FROM files WHERE urlPath LIKE ?", arguments: ["%/\(Self.faulty)-%"])
                )
            }
            for row in faultyRows {
                if let error: String = row["error"], let reason: String = row["reason"] { reasons.insert("\(error): \(reason)") }
            }
            let now = Date()
            if count > verified {
                verified = count
                lastProgress = now
            }
            longestPause = max(longestPause, now.timeIntervalSince(lastProgress))
            if verified < Self.healthyFiles { try await Task.sleep(nanoseconds: 200_000_000) }
        }
        let healthySeconds = Date().timeIntervalSince(began)
        XCTAssertLessThan(
            longestPause, Self.longestPause,
            "healthy files waited \(Int(longestPause)) s while stalled files held the slots")
        // The stalls were seen for what they are: the items wait idle with NetworkError, saying why.
        XCTAssertTrue(reasons.contains { $0.hasPrefix("NetworkError: Stalled: no data from the origin for ") }, "\(reasons)")
        XCTAssertTrue(reasons.contains { $0.hasPrefix("NetworkError: Stalled: 1 B/s over ") }, "\(reasons)")
        XCTAssertTrue(
            reasons.contains { $0.hasPrefix("NetworkError: Stalled: ") && $0.contains(", far below the other downloads' ") },
            "\(reasons)")
        let partial = try await pool.read { db in
            try Int64.fetchOne(db, sql: "SELECT bytesOnDisk FROM files WHERE urlPath LIKE ?", arguments: ["%\(paths[3])"]) ?? 0
        }
        XCTAssertGreaterThanOrEqual(partial, 65_536, "the file cut off keeps what it received")

        // The server is healthy again: the four files complete by themselves, nothing called.
        let cleared = try await h.api.delete("/_control/faults")
        XCTAssertEqual(cleared.status, 200)
        let recoveredAt = Date()
        try await h.waitStationComplete(Self.faulty, timeout: 90)
        let recoverySeconds = Date().timeIntervalSince(recoveredAt)

        for (_, file) in faulty.merging(healthy, uniquingKeysWith: { first, _ in first }) {
            let local = h.mediaDir + "/" + localName(file.url)
            XCTAssertEqual(try sha256(ofFile: local), file.sha256, local)
        }
        XCTAssertTrue(h.mediaFiles().allSatisfy { !$0.hasSuffix(".part") }, "\(h.mediaFiles())")
        let (_, ranged) = try await h.mediaStats()
        XCTAssertGreaterThanOrEqual(ranged[paths[3]] ?? 0, 1, "the file cut off resumed with Range: \(ranged)")
        stressReport(
            "stalled transfers", setting,
            String(
                format: "healthy station of %d verified in %.1f s (longest pause %.1f s); stalled files verified %.1f s after the fault cleared",
                Self.healthyFiles, healthySeconds, longestPause, recoverySeconds))
    }

    /// `/media/…` of a manifest URL, absolute or not.
    private static func path(of url: String) -> String {
        guard let scheme = url.range(of: "://") else { return url }
        let rest = url[scheme.upperBound...]
        return rest.firstIndex(of: "/").map { String(rest[$0...]) } ?? "/"
    }
}
