import Foundation
import GRDB
import TestSupport
import Wire
import XCTest

/// When the cache is full, heard station tracks go first, least recently played first; an
/// unheard track and content asked for with offline.add are never evicted.
final class EvictionTests: XCTestCase {
    func testHeardStationTracksGoFirstLeastRecentlyPlayedFirst() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        let events = try await h.client()
        _ = try await events.call("events.subscribe", ["topics": ["downloads"]])
        _ = try await h.call("stations.sync", ["stationId": "st-10"])
        try await h.waitStationComplete("st-10")
        let manifest = try await h.manifest("st-10")
        let ids = manifest.keys.sorted()
        XCTAssertEqual(ids.count, 3)
        // The player marks plays: ids[1] heard 3 h ago, ids[0] 1 h ago, ids[2] never.
        let pool = try h.catalogPool()
        try await pool.write { db in
            try db.execute(sql: "UPDATE stationItems SET playedAt = ? WHERE itemId = ?", arguments: [Date().addingTimeInterval(-3 * 3600), ids[1]])
            try db.execute(sql: "UPDATE stationItems SET playedAt = ? WHERE itemId = ?", arguments: [Date().addingTimeInterval(-3600), ids[0]])
        }
        func used() async throws -> Int {
            try await pool.read { db in
                try Int.fetchOne(db, sql: "SELECT SUM(CASE WHEN state = 'verified' THEN sizeBytes ELSE bytesOnDisk END) FROM files") ?? 0
            }
        }
        func blocks(_ n: Int) -> Int { (n + 4095) / 4096 * 4096 }
        func exists(_ id: String) -> Bool {
            FileManager.default.fileExists(atPath: h.mediaDir + "/" + localName(manifest[id]!.url))
        }
        func addOneByteShort(_ product: String) async throws -> String {
            let size = try await PolicyTest.product(h.origin.baseURL, product).size
            _ = try await h.call("policy.set", ["maxCacheBytes": .number(Double(try await used() + blocks(size) - 1))])
            return try PolicyTest.token(try await h.call("offline.add", ["productId": .string(product)]))
        }

        // One byte short: the least recently heard track goes, and only it.
        let one = try await addOneByteShort("tr-1")
        _ = try await h.waitProduct(one, state: "cached")
        XCTAssertFalse(exists(ids[1]), "the least recently played track was kept")
        XCTAssertTrue(exists(ids[0]) && exists(ids[2]))
        // Again: the other heard track.
        let two = try await addOneByteShort("tr-2")
        _ = try await h.waitProduct(two, state: "cached")
        XCTAssertFalse(exists(ids[0]))
        XCTAssertTrue(exists(ids[2]), "an unheard track was evicted")
        // Nothing heard is left: the unheard track and the explicit products stay; CacheLimit.
        _ = try await h.call("policy.set", ["maxCacheBytes": .number(Double(try await used()))])
        let three = try PolicyTest.token(try await h.call("offline.add", ["productId": "tr-3"]))
        let refused = try await h.status(three)
        XCTAssertEqual(refused["state"]?.stringValue, "idle")
        XCTAssertEqual(refused["error"]?.stringValue, "CacheLimit")
        XCTAssertTrue(refused["reason"]?.stringValue?.contains("maxCacheBytes") == true, "\(refused)")
        XCTAssertTrue(exists(ids[2]))
        for token in [one, two] {
            let state = try await h.status(token)["state"]?.stringValue
            XCTAssertEqual(state, "cached")
        }

        var evicted: [String] = []
        for await event in events.events where event.type == "ItemEvicted" {
            evicted.append(event.data["itemId"]?.stringValue ?? "?")
            if evicted.count == 2 { break }
        }
        XCTAssertEqual(evicted, [ids[1], ids[0]], "eviction order")
        print("eviction: order \(evicted), unheard \(ids[2]) kept, tr-3 refused: \(refused["reason"]?.stringValue ?? "")")
        await events.close()
    }
}
