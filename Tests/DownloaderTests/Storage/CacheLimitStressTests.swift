import Foundation
import GRDB
import TestSupport
import Wire
import XCTest

/// Three files of ~750 KB in a station, `maxCacheBytes` at 60 % of their total and three
/// transfers allowed at once: what is stored never exceeds the limit (the media folder,
/// sampled throughout, and the catalog), one file is verified, and the two that do not fit
/// are reported as `ItemStateChanged` with `error: "CacheLimit"` and a reason.
final class CacheLimitStressTests: XCTestCase {
    static let station = "st-cap"
    static let files = 3
    static let fileBytes = 750_000
    static var maxCacheBytes: Int { Self.files * Self.fileBytes * 6 / 10 }

    func testCacheLimitHoldsUnderParallelDownloadsOnOneCore() async throws {
        try await fillToLimit(.oneCore)
    }

    func testCacheLimitHoldsUnderParallelDownloadsOnAllCores() async throws {
        try await fillToLimit(.allCores)
    }

    private func fillToLimit(_ setting: CoreSetting) async throws {
        let station = Self.station, limit = Self.maxCacheBytes
        let h = try DownloaderHarness(synthetic: ["\(station)=\(Self.files)x\(Self.fileBytes)"])
        defer { h.discard() }
        let service = try await h.startOnline(on: setting)
        let policy = try await h.call("policy.set", ["maxCacheBytes": .number(Double(limit)), "maxParallel": 3])
        XCTAssertEqual(policy["maxCacheBytes"]?.intValue, limit)
        XCTAssertEqual(policy["maxParallel"]?.intValue, 3)
        let manifest = try await h.manifest(station)
        XCTAssertEqual(manifest.count, Self.files)

        let probe = try await StatusProbe.start(socketPath: service.socketPath)
        let sampler = MediaSampler(h.mediaDir)
        let client = try await h.client()
        defer { Task { await client.close() } }
        let events = EventCollector(client)
        _ = try await client.call("events.subscribe", ["topics": ["downloads", "catalog"]])

        let answer = try await client.call("stations.sync", ["stationId": .string(station)])
        XCTAssertEqual(answer["total"]?.intValue, Self.files, "\(answer)")
        let blocked = try await waitUntil("one file verified and two blocked by the cache limit", timeout: 30) {
            let list = try await h.call("stations.list")
            let entry = list["localOffline"]?.arrayValue?.first { $0["id"]?.stringValue == station }
            return entry?["verifiedCount"]?.intValue == 1 && Set(Self.cacheLimited(events).map(\.item)).count == 2
        }
        // Idle items are re-checked every second: give them a few chances to start anyway.
        try await Task.sleep(for: .seconds(3))
        let peak = sampler.stop()
        let figures = await probe.stop()

        let limited = Self.cacheLimited(events)
        for event in limited {
            XCTAssertEqual(event.station, station)
            XCTAssertTrue(event.reason.hasPrefix("needs ") && event.reason.contains("maxCacheBytes"), event.reason)
        }
        let blockedItems = Set(limited.map(\.item))
        XCTAssertEqual(blockedItems.count, 2, "items reported CacheLimit: \(limited)")
        XCTAssertTrue(blockedItems.isSubset(of: Set(manifest.keys)), "\(blockedItems)")

        let verified = try await h.catalogPool().read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT si.itemId, f.sizeBytes FROM stationItems si JOIN mediaItems m ON m.id = si.itemId
                      JOIN files f ON f.id = m.fileId WHERE si.stationId = ? AND f.state = 'verified'
                    """, arguments: [station]
            ).map { ($0["itemId"] as String, $0["sizeBytes"] as Int) }
        }
        XCTAssertEqual(verified.count, 1, "verified in the catalog: \(verified)")
        XCTAssertLessThanOrEqual(verified.map(\.1).reduce(0, +), limit)
        XCTAssertTrue(Set(verified.map(\.0)).isDisjoint(with: blockedItems), "an item reported CacheLimit was verified")

        let stored = h.mediaFiles()
        XCTAssertEqual(stored.filter { !$0.hasSuffix(".part") }.count, 1, "\(stored)")
        if let item = verified.first?.0, let entry = manifest[item] {
            XCTAssertEqual(try sha256(ofFile: h.mediaDir + "/" + localName(entry.url)), entry.sha256)
        }
        let final = MediaSampler.measure(h.mediaDir)
        XCTAssertLessThanOrEqual(final.bytes, limit, "the media folder holds more than maxCacheBytes at the end")
        XCTAssertLessThanOrEqual(peak.bytes, limit, "the media folder held more than maxCacheBytes at some point")
        XCTAssertLessThanOrEqual(peak.allocated, limit, "the media folder's blocks exceeded maxCacheBytes at some point")
        XCTAssertTrue(figures.failures.isEmpty && figures.late.isEmpty, "\(figures)")

        stressReport(
            "cache limit \(Self.files)x\(Self.fileBytes)B", setting,
            String(
                format: "maxCacheBytes %d: 1 verified, 2 CacheLimit after %.2f s; media folder peak %d B (%d B allocated) over %d samples; %@",
                limit, blocked, peak.bytes, peak.allocated, peak.samples, figures.description))
    }

    /// The station items reported blocked by the cache limit so far.
    private static func cacheLimited(_ events: EventCollector) -> [(station: String, item: String, reason: String)] {
        events.of("ItemStateChanged").compactMap { event in
            guard event.data["error"]?.stringValue == "CacheLimit", event.data["state"]?.stringValue == "idle",
                let item = event.data["itemId"]?.stringValue
            else { return nil }
            return (event.data["stationId"]?.stringValue ?? "", item, event.data["reason"]?.stringValue ?? "")
        }
    }
}
