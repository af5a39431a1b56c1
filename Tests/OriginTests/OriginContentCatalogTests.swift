import Foundation
import TestSupport
import XCTest

/// The reference origin's content catalog: sources, nested categories, and the items change
/// feed driven through `/_control/catalog/items`.
final class OriginContentCatalogTests: OriginTestCase {
    func testSourcesAndNestedCategories() async throws {
        let api = try api
        let sources = try api.json(try await api.get("/v1/catalog/sources"))
        XCTAssertEqual(sources.objects("sources").compactMap { $0.string("id") }, ["src-music", "src-video", "src-news"])
        XCTAssertNotNil(parseServerTime(sources.string("serverTime")))
        let categories = try api.json(try await api.get("/v1/catalog/categories")).objects("categories")
        let parents = Dictionary(uniqueKeysWithValues: categories.map { ($0.string("id")!, $0["parentId"] as? String ?? "-") })
        XCTAssertEqual(
            parents,
            [
                "cat-music": "-", "cat-focus": "cat-music", "cat-workout": "cat-music", "cat-singles": "cat-music",
                "cat-video": "-", "cat-trailers": "cat-video", "cat-news": "-",
            ])
        let anonymousStatus = try await api.get("/v1/catalog/items", authorized: false).status
        XCTAssertEqual(anonymousStatus, 401)
    }

    func testItemsFeedAnswersOnlyWhatChangedSinceTheCursor() async throws {
        let api = try api
        let full = try api.json(try await api.get("/v1/catalog/items"))
        let items = full.objects("items")
        XCTAssertEqual(
            Set(items.compactMap { $0.string("id") }),
            [
                "it-tr-9-01", "it-tr-9-02", "it-tr-9-03", "it-tr-10-01", "it-tr-10-02", "it-tr-10-03",
                "it-tr-1", "it-tr-2", "it-tr-3", "it-vid-1",
            ])
        let video = try XCTUnwrap(items.first { $0.string("id") == "it-vid-1" })
        XCTAssertEqual(video.string("type"), "VIDEO")
        XCTAssertEqual(video.strings("categories"), ["cat-video", "cat-trailers"])
        XCTAssertGreaterThan(video.int("sizeBytes") ?? 0, 0)
        let cursor = try XCTUnwrap(full.string("cursor"))

        let unchanged = try api.json(try await api.get("/v1/catalog/items?since=\(cursor)"))
        XCTAssertEqual(unchanged.objects("items").count, 0)
        XCTAssertEqual(unchanged.strings("removed"), [])
        XCTAssertEqual(unchanged.string("cursor"), cursor)

        let published = try await api.post(
            "/_control/catalog/items",
            [
                "id": "it-new", "productId": "tr-10-01", "type": "TRACK", "title": "Fresh", "sourceId": "src-music",
                "categories": ["cat-workout"], "sizeBytes": 1000, "publishedAt": "2026-02-01T00:00:00Z", "priority": 55,
            ], authorized: false)
        XCTAssertEqual(published.status, 200)
        let deleteStatus = try await api.delete("/_control/catalog/items/it-tr-1").status
        XCTAssertEqual(deleteStatus, 200)
        let deleteAgainStatus = try await api.delete("/_control/catalog/items/it-tr-1").status
        XCTAssertEqual(deleteAgainStatus, 404)
        let changed = try await api.post("/_control/catalog/items", ["id": "it-tr-2", "priority": 99], authorized: false)
        XCTAssertEqual(changed.status, 200)

        let since = try api.json(try await api.get("/v1/catalog/items?since=\(cursor)"))
        XCTAssertEqual(since.objects("items").compactMap { $0.string("id") }, ["it-new", "it-tr-2"])
        XCTAssertEqual(since.objects("items").last?.int("priority"), 99)
        XCTAssertEqual(since.objects("items").last?.string("title"), "Second Wind", "fields left out keep their value")
        XCTAssertEqual(since.strings("removed"), ["it-tr-1"])
        let stats = try await api.stats()
        XCTAssertEqual(stats.int("catalogItemsServed"), 10 + 0 + 3)

        let notACursorStatus = try await api.get("/v1/catalog/items?since=abc").status
        XCTAssertEqual(notACursorStatus, 400)
        let aheadCursorStatus = try await api.get("/v1/catalog/items?since=\(cursor)9").status
        XCTAssertEqual(aheadCursorStatus, 400)
        let bad = try await api.post("/_control/catalog/items", ["id": "it-bad", "productId": "tr-1"], authorized: false)
        XCTAssertEqual(bad.status, 400)

        // A new feed (reset): the old cursor is refused, not read against another history.
        let reset = try await api.post("/_control/reset", [String: Any](), authorized: false)
        XCTAssertEqual(reset.status, 200)
        let stale = try await api.get("/v1/catalog/items?since=\(cursor)")
        XCTAssertEqual(stale.status, 400)
        let fresh = try api.json(try await api.get("/v1/catalog/items"))
        XCTAssertEqual(fresh.objects("items").count, 10)
    }
}
