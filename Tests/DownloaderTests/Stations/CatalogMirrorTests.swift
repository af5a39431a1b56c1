import Foundation
import TestSupport
import Wire
import XCTest

/// The content catalog through the downloader's socket, against the reference origin's demo
/// catalog: priorities 9-01 50, 9-02 80, 9-03 20, 10-01 60, 10-02 10, 10-03 90, tr-1 70,
/// tr-2 40, tr-3 30, vid-1 100; published one hour apart in that order.
final class CatalogMirrorTests: XCTestCase {
    private func ids(_ result: JSONValue, _ key: String = "items") -> [String] {
        (result[key]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
    }

    private func items(_ h: DownloaderHarness, _ params: JSONValue = .object([:])) async throws -> [String: JSONValue] {
        let list = try await h.call("catalog.items", params)["items"]?.arrayValue ?? []
        return Dictionary(uniqueKeysWithValues: list.map { ($0["id"]!.stringValue!, $0) })
    }

    /// Waits until `done` holds for the items (`catalog.items`, filter all).
    @discardableResult
    private func waitItems(
        _ h: DownloaderHarness, _ what: String, timeout: Double = 60,
        _ done: ([String: JSONValue]) -> Bool
    ) async throws -> [String: JSONValue] {
        let deadline = Date().addingTimeInterval(timeout)
        var last: [String: JSONValue] = [:]
        while Date() < deadline {
            last = try await items(h)
            if done(last) { return last }
            try await Task.sleep(nanoseconds: 150_000_000)
        }
        throw OriginTestError("\(what) not reached within \(timeout)s: \(last.mapValues { $0["state"]?.stringValue ?? "?" })")
    }

    private func catalogEvents(_ h: DownloaderHarness) async throws -> (RPCClient, EventCollector) {
        let client = try await h.client()
        let events = EventCollector(client)
        _ = try await client.call("events.subscribe", ["topics": ["catalog"]])
        return (client, events)
    }

    private func originSizes(_ h: DownloaderHarness) async throws -> [String: Int] {
        let feed = try h.api.json(try await h.api.get("/v1/catalog/items"))
        return Dictionary(uniqueKeysWithValues: feed.objects("items").map { ($0.string("id")!, $0.int("sizeBytes")!) })
    }

    func testSubscribedSelectedItemsDownloadByThemselvesInPriorityOrderUpToMaxAutoBytesAndRemovedOnesGo() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        let size = try await originSizes(h)
        // By priority: 9-02 (80), tr-1 (70), 9-01 (50), tr-2 (40), tr-3 (30), 9-03 (20). The first
        // four fit; the fifth would pass the bound by one byte.
        let expected = ["it-tr-9-02", "it-tr-1", "it-tr-9-01", "it-tr-2"]
        let cap = expected.map { size[$0]! }.reduce(0, +) + size["it-tr-3"]! - 1
        try h.setConfig(#"{"downloader":{"catalog":{"maxAutoBytes":\#(cap)}}}"#)
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        let (client, events) = try await catalogEvents(h)
        defer { Task { await client.close() } }
        _ = try await h.call("catalog.refresh")
        let states = try await items(h).values.map { $0["state"]?.stringValue }
        XCTAssertEqual(states, Array(repeating: "discovered", count: 10))

        _ = try await h.call("catalog.subscribe", ["sourceId": "src-music", "subscribed": true])
        _ = try await h.call("catalog.select", ["categoryId": "cat-focus", "selected": true])
        _ = try await h.call("catalog.select", ["categoryId": "cat-singles", "selected": true])
        let done = try await waitItems(h, "four items cached") { all in
            expected.allSatisfy { all[$0]?["state"]?.stringValue == "cached" }
        }
        for id in ["it-tr-3", "it-tr-9-03", "it-tr-10-01", "it-tr-10-02", "it-tr-10-03", "it-vid-1"] {
            XCTAssertEqual(done[id]?["state"]?.stringValue, "discovered", id)
        }
        // Requested in priority order.
        let requested = try await h.call("offline.list", ["sort": "requestedAt"])["items"]?.arrayValue ?? []
        XCTAssertEqual(requested.compactMap { $0["productId"]?.stringValue }, ["tr-9-02", "tr-1", "tr-9-01", "tr-2"])
        let status = try await h.call("service.status")["contentCatalog"]
        XCTAssertEqual(status?["prepositioned"], 4)
        XCTAssertEqual(status?["prepositionedBytes"]?.intValue, cap - size["it-tr-3"]! + 1)
        XCTAssertEqual(status?["subscribedSources"], 1)
        XCTAssertEqual(status?["selectedCategories"], 2)
        for id in expected {
            try await events.wait("\(id) cached", timeout: 10) {
                $0.type == "ItemStateChanged" && $0.data["itemId"]?.stringValue == id && $0.data["state"]?.stringValue == "cached"
            }
        }
        XCTAssertTrue(events.of("SourcesChanged").count >= 1 && events.of("CategoriesChanged").count >= 2)
        // The run's events, for the record.
        for event in events.all { print("catalog event seq=\(event.seq) \(event.type) \(String(decoding: event.data.serialized(), as: UTF8.self))") }

        // Removed at the origin: the saved item's content stays, the other's goes.
        _ = try await h.call("catalog.save", ["itemId": "it-tr-9-02", "saved": true])
        let deletedTr1 = try await h.api.delete("/_control/catalog/items/it-tr-1").status
        XCTAssertEqual(deletedTr1, 200)
        let deletedTr902 = try await h.api.delete("/_control/catalog/items/it-tr-9-02").status
        XCTAssertEqual(deletedTr902, 200)
        let from = events.count
        let refreshed = try await h.call("catalog.refresh")
        XCTAssertEqual(refreshed["removed"], ["it-tr-1"])
        XCTAssertEqual(refreshed["changed"], ["it-tr-9-02"])
        let change = try await events.wait("ItemsChanged", from: from, timeout: 10) { $0.type == "ItemsChanged" }
        XCTAssertEqual(change.data["removed"], ["it-tr-1"])
        let tr1State = try await h.call("offline.state", ["productId": "tr-1"])["state"]
        XCTAssertEqual(tr1State, "NOT_OFFLINED")
        let tr902State = try await h.call("offline.state", ["productId": "tr-9-02"])["state"]
        XCTAssertEqual(tr902State, "OFFLINED_AND_VALID")
        XCTAssertFalse(h.mediaFiles().contains { $0.hasPrefix("tracks/tr-1.") }, "\(h.mediaFiles())")
        XCTAssertTrue(h.mediaFiles().contains { $0.hasPrefix("tracks/tr-9-02.") }, "\(h.mediaFiles())")
        let saved = try await h.call("catalog.items", ["filter": "saved"])["items"]?.arrayValue ?? []
        XCTAssertEqual(saved.map { $0["id"] }, ["it-tr-9-02"])
        XCTAssertEqual(saved.first?["removed"], true)
        // Unsaved, the removed item is forgotten and its content goes too.
        let unsaved = try await h.call("catalog.save", ["itemId": "it-tr-9-02", "saved": false])
        XCTAssertEqual(unsaved["forgotten"], true)
        let tr902StateUnsaved = try await h.call("offline.state", ["productId": "tr-9-02"])["state"]
        XCTAssertEqual(tr902StateUnsaved, "NOT_OFFLINED")
        let forgottenItem = try await items(h)["it-tr-9-02"]
        XCTAssertNil(forgottenItem)
    }

    func testAPublishedItemArrivesThroughItemsChangedWithOnlyTheChangeFetched() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        try h.start()
        // The refresh at start, then nothing for an hour (catalog.refreshSeconds).
        let deadline = Date().addingTimeInterval(20)
        while try await h.call("catalog.sources")["sources"]?.arrayValue?.count != 3, Date() < deadline {
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        let sourceIds = ids(try await h.call("catalog.sources"), "sources")
        XCTAssertEqual(sourceIds, ["src-music", "src-video", "src-news"])
        let (client, events) = try await catalogEvents(h)
        defer { Task { await client.close() } }
        let before = try await h.api.stats()
        let published = try await h.api.post(
            "/_control/catalog/items",
            [
                "id": "it-new", "productId": "tr-10-01", "type": "TRACK", "title": "Fresh", "sourceId": "src-music",
                "categories": ["cat-workout"], "sizeBytes": 1000, "publishedAt": "2026-02-01T00:00:00Z", "priority": 55,
            ], authorized: false)
        XCTAssertEqual(published.status, 200)

        let refreshed = try await client.call("catalog.refresh")
        XCTAssertEqual(refreshed["added"], ["it-new"])
        XCTAssertEqual(refreshed["changed"], [])
        let event = try await events.wait("ItemsChanged", timeout: 10) { $0.type == "ItemsChanged" }
        XCTAssertEqual(event.data["added"], ["it-new"])
        XCTAssertEqual(event.data["removed"], [])
        let after = try await h.api.stats()
        XCTAssertEqual((after.int("catalogItemsServed") ?? 0) - (before.int("catalogItemsServed") ?? 0), 1, "only the change moves")
        XCTAssertEqual((after.object("requests").int("/v1/catalog/items") ?? 0) - (before.object("requests").int("/v1/catalog/items") ?? 0), 1)
        let item = try await items(h)["it-new"]
        XCTAssertEqual(item?["title"], "Fresh")
        XCTAssertEqual(item?["state"], "discovered")

        // Nothing changed: no event; a change afterwards is the next ItemsChanged.
        let quiet = try await client.call("catalog.refresh")
        XCTAssertEqual(quiet["added"], [])
        _ = try await h.api.post("/_control/catalog/items", ["id": "it-new", "priority": 5], authorized: false)
        let changed = try await client.call("catalog.refresh")
        XCTAssertEqual(changed["changed"], ["it-new"])
        try await events.wait("second ItemsChanged", timeout: 10) { $0.type == "ItemsChanged" && $0.data["changed"] == ["it-new"] }
        let itemEvents = events.of("ItemsChanged")
        XCTAssertEqual(itemEvents.count, 2, "\(itemEvents.map(\.data))")
        XCTAssertTrue(events.of("SourcesChanged").isEmpty && events.of("CategoriesChanged").isEmpty)

        // The origin starts a new feed (reset: the demo catalog again): the held cursor is
        // refused, the whole catalog is fetched, and what it no longer lists is removed.
        let reset = try await h.api.post("/_control/reset", [String: Any](), authorized: false)
        XCTAssertEqual(reset.status, 200)
        let resynced = try await client.call("catalog.refresh")
        XCTAssertEqual(resynced["removed"], ["it-new"])
        XCTAssertEqual(resynced["added"], [])
        let itemCount = try await items(h).count
        XCTAssertEqual(itemCount, 10)
    }

    func testEveryFilterAndSortMatchesTheHandComputedSetAlsoWithTheOriginDown() async throws {
        let h = try DownloaderHarness(config: #"{"downloader":{"catalog":{"maxAutoBytes":0}}}"#)
        defer { h.discard() }
        let size = try await originSizes(h)
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        _ = try await h.call("catalog.refresh")
        // Content through explicit requests; tr-2 is watched (a consumption record, through the
        // reporter on the same catalog); it-tr-3 is saved.
        for product in ["tr-1", "tr-2", "vid-1"] { _ = try await h.call("offline.add", ["productId": .string(product)]) }
        _ = try await h.call("catalog.save", ["itemId": "it-tr-3", "saved": true])
        let reporter = try ServiceProcess(
            "reporter", in: h.dir, extraArgs: ["--origin", h.origin.baseURL],
            environment: ["CASSETTE_CLIENT_TOKEN": "demo", "CASSETTE_CLIENT_SECRET": "demo"])
        try reporter.waitReady()
        let reporterClient = try await reporter.client()
        _ = try await reporterClient.call("consumption.record", ["productId": "tr-2", "at": "2026-11-20T10:00:00Z", "start": 0, "end": 3])
        await reporterClient.close()
        try await waitItems(h, "content cached") { all in
            ["it-tr-1", "it-tr-2", "it-vid-1"].allSatisfy { all[$0]?["state"]?.stringValue == "cached" }
        }
        _ = try await h.call("catalog.select", ["categoryId": "cat-focus", "selected": true])
        _ = try await h.call("catalog.select", ["categoryId": "cat-news", "selected": true])

        let byPriority = [
            "it-vid-1", "it-tr-10-03", "it-tr-9-02", "it-tr-1", "it-tr-10-01", "it-tr-9-01", "it-tr-2", "it-tr-3",
            "it-tr-9-03", "it-tr-10-02",
        ]
        let bySize = byPriority.enumerated().sorted { a, b in
            size[a.element]! != size[b.element]! ? size[a.element]! < size[b.element]! : a.offset < b.offset
        }.map(\.element)
        let cases: [(JSONValue, [String])] = [
            (["filter": "all"], byPriority),
            ([:], byPriority),
            (
                ["sort": [["key": "publishedAt", "ascending": true]]],
                ["it-tr-9-01", "it-tr-9-02", "it-tr-9-03", "it-tr-10-01", "it-tr-10-02", "it-tr-10-03", "it-tr-1", "it-tr-2", "it-tr-3", "it-vid-1"]
            ),
            (
                ["sort": [["key": "title", "ascending": true]]],
                ["it-vid-1", "it-tr-1", "it-tr-9-01", "it-tr-9-02", "it-tr-9-03", "it-tr-2", "it-tr-3", "it-tr-10-01", "it-tr-10-02", "it-tr-10-03"]
            ),
            (["sort": [["key": "priority", "ascending": true]]], Array(byPriority.reversed())),
            (["sort": [["key": "sizeBytes"]]], bySize),
            (["filter": "downloading"], []),
            (["filter": "withCategory", "categoryId": "cat-singles"], ["it-tr-1", "it-tr-2", "it-tr-3"]),
            (["filter": "withCategory", "categoryId": "cat-music"], []),
            (["filter": "downloadedWithCategory", "categoryId": "cat-singles"], ["it-tr-1", "it-tr-2"]),
            (["filter": "saved"], ["it-tr-3"]),
            (["filter": "downloadedNotViewed"], ["it-vid-1", "it-tr-1"]),
            (["filter": "downloadedNotViewed", "sort": [["key": "title", "ascending": false]]], ["it-tr-1", "it-vid-1"]),
            (["filter": "videos"], ["it-vid-1"]),
            (["filter": "videosDownloading"], []),
            (["filter": "videosWithCategory", "categoryId": "cat-trailers"], ["it-vid-1"]),
            (["filter": "videosWithCategory", "categoryId": "cat-singles"], []),
            (["filter": "videosDownloadedWithCategory", "categoryId": "cat-video"], ["it-vid-1"]),
            (["filter": "videosDownloadedOrDownloadingWithCategory", "categoryId": "cat-video"], ["it-vid-1"]),
            (["filter": "videosSaved"], []),
            (["filter": "videosDownloadedNotViewed"], ["it-vid-1"]),
        ]
        let categoryCases: [(JSONValue, [String])] = [
            ([:], ["cat-music", "cat-focus", "cat-workout", "cat-singles", "cat-video", "cat-trailers", "cat-news"]),
            (["filter": "selected"], ["cat-focus", "cat-news"]),
            (["filter": "selectedWithContent"], ["cat-focus"]),
            (["filter": "subcategories:cat-music"], ["cat-focus", "cat-workout", "cat-singles"]),
            (["filter": "subcategories:cat-focus"], []),
            (
                ["sort": [["key": "name", "ascending": true]]],
                ["cat-focus", "cat-music", "cat-news", "cat-singles", "cat-trailers", "cat-video", "cat-workout"]
            ),
            (
                ["sort": [["key": "itemCount", "ascending": false], ["key": "id", "ascending": true]]],
                ["cat-focus", "cat-singles", "cat-workout", "cat-trailers", "cat-video", "cat-music", "cat-news"]
            ),
        ]
        func check(_ when: String) async throws {
            for (params, expected) in cases {
                let itemIds = ids(try await h.call("catalog.items", params))
                XCTAssertEqual(itemIds, expected, "\(when): \(params)")
            }
            for (params, expected) in categoryCases {
                let categoryIds = ids(try await h.call("catalog.categories", params), "categories")
                XCTAssertEqual(categoryIds, expected, "\(when): \(params)")
            }
            let sources = try await h.call("catalog.sources", ["sort": [["key": "name", "ascending": false]]])
            XCTAssertEqual(ids(sources, "sources"), ["src-video", "src-news", "src-music"], when)
            let focus = try await h.call("catalog.categories", ["filter": "selected"])["categories"]?.arrayValue?.first
            XCTAssertEqual(focus?["itemCount"], 3)
            XCTAssertEqual(focus?["parentId"], "cat-music")
            let tr2 = try await items(h)["it-tr-2"]
            XCTAssertEqual(tr2?["viewed"], true)
            XCTAssertEqual(tr2?["sizeBytes"]?.intValue, size["it-tr-2"])
        }
        try await check("online")
        // Bad input: named errors, nothing changed.
        let refusals: [(String, JSONValue, String)] = [
            ("catalog.items", ["filter": "everything"], "InvalidParams"),
            ("catalog.items", ["filter": "withCategory"], "InvalidParams"),
            ("catalog.items", ["filter": "all", "categoryId": "cat-focus"], "InvalidParams"),
            ("catalog.items", ["filter": "withCategory", "categoryId": "cat-none"], "UnknownCategory"),
            ("catalog.items", ["sort": [["key": "color"]]], "InvalidParams"),
            ("catalog.items", ["colour": "red"], "InvalidParams"),
            ("catalog.categories", ["filter": "subcategories:cat-none"], "UnknownCategory"),
            ("catalog.categories", ["filter": "popular"], "InvalidParams"),
            ("catalog.subscribe", ["sourceId": "src-none", "subscribed": true], "UnknownSource"),
            ("catalog.subscribe", ["sourceId": "../x", "subscribed": true], "InvalidParams"),
            ("catalog.select", ["categoryId": "cat-none", "selected": true], "UnknownCategory"),
            ("catalog.save", ["itemId": "it-none", "saved": true], "UnknownItem"),
            ("catalog.save", ["itemId": "it-tr-1"], "InvalidParams"),
            ("catalog.refresh", ["now": true], "InvalidParams"),
        ]
        for (method, params, name) in refusals {
            do {
                _ = try await h.call(method, params)
                XCTFail("\(method) \(params) was accepted")
            } catch let error as RPCError {
                XCTAssertEqual(error.name, name, "\(method) \(params): \(error.message)")
            }
        }

        h.origin.stop()
        try await check("origin down")
        do {
            _ = try await h.call("catalog.refresh")
            XCTFail("catalog.refresh succeeded with the origin down")
        } catch let error as RPCError {
            XCTAssertEqual(error.name, "OriginUnreachable", error.message)
        }
        try await check("after a failed refresh")
        let status = try await h.call("service.status")["contentCatalog"]
        XCTAssertEqual(status?["lastRefreshError"]?.stringValue?.contains("OriginUnreachable"), true, "\(String(describing: status))")
        // Started again while the origin is away: everything answers from the catalog.
        try h.stop()
        try h.start()
        try await check("restarted with the origin down")
        reporter.signal(SIGTERM)
        _ = try? reporter.waitExit()
    }

    func testAnExplicitRequestWinsRoomOverPrepositionedContentViewedItemsFirst() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        let size = try await originSizes(h)
        let explicitSize = try await h.manifest("st-10")["tr-10-02"]!.size
        var info = statvfs()
        XCTAssertEqual(statvfs(h.dir.stateDir, &info), 0)
        let block = max(1, Int(info.f_bsize))
        // Room for the three prepositioned singles and one byte short of the explicit request.
        let cap = size["it-tr-1"]! + size["it-tr-2"]! + size["it-tr-3"]! + (explicitSize + block - 1) / block * block - 1
        try h.setConfig(#"{"downloader":{"maxCacheBytes":\#(cap),"catalog":{"keepViewedDays":0}}}"#)
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        _ = try await h.call("catalog.refresh")
        _ = try await h.call("catalog.subscribe", ["sourceId": "src-music", "subscribed": true])
        _ = try await h.call("catalog.select", ["categoryId": "cat-singles", "selected": true])
        let singles = ["it-tr-1", "it-tr-2", "it-tr-3"]
        try await waitItems(h, "singles cached") { all in singles.allSatisfy { all[$0]?["state"]?.stringValue == "cached" } }
        // tr-3 is watched: of the three, it is the one to give way first (tr-2 would be, by priority).
        let reporter = try ServiceProcess(
            "reporter", in: h.dir, extraArgs: ["--origin", h.origin.baseURL],
            environment: ["CASSETTE_CLIENT_TOKEN": "demo", "CASSETTE_CLIENT_SECRET": "demo"])
        try reporter.waitReady()
        let reporterClient = try await reporter.client()
        _ = try await reporterClient.call("consumption.record", ["productId": "tr-3", "at": "2026-11-20T10:00:00Z", "start": 0, "end": 2])
        await reporterClient.close()
        reporter.signal(SIGTERM)
        _ = try? reporter.waitExit()

        let client = try await h.client()
        defer { Task { await client.close() } }
        let events = EventCollector(client)
        _ = try await client.call("events.subscribe", ["topics": ["downloads", "catalog"]])
        let added = try await h.call("offline.add", ["productId": "tr-10-02"])
        let token = try XCTUnwrap(added["token"]?.stringValue)
        _ = try await h.waitProduct(token, state: "cached", timeout: 60)
        // It did wait for room, and room was made from the watched item.
        XCTAssertTrue(
            events.of("ItemStateChanged").contains {
                $0.data["token"]?.stringValue == token && $0.data["state"] == "idle" && $0.data["error"] == "CacheLimit"
            }, "\(events.all.map(\.data))")
        try await events.wait("it-tr-3 gave way", timeout: 10) {
            $0.topic == "catalog" && $0.data["itemId"] == "it-tr-3" && $0.data["state"] == "discovered"
        }
        let after = try await items(h)
        XCTAssertEqual(after["it-tr-3"]?["state"], "discovered")
        XCTAssertEqual(after["it-tr-3"]?["viewed"], true)
        XCTAssertEqual(after["it-tr-1"]?["state"], "cached")
        XCTAssertEqual(after["it-tr-2"]?["state"], "cached")
        XCTAssertFalse(h.mediaFiles().contains { $0.hasPrefix("tracks/tr-3.") }, "\(h.mediaFiles())")
        let explicitState = try await h.call("offline.state", ["productId": "tr-10-02"])["state"]
        XCTAssertEqual(explicitState, "OFFLINED_AND_VALID")
    }

    func testKillDuringPrepositioningLosesNothing() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        // Slow media and slow playbackinfo: the round that queues the nine items is still going
        // when the first ones download.
        try await h.api.injectFaults("/media/", [["bytesPerSecond": 60_000, "repeat": 10_000]])
        try await h.api.injectFaults("/v1/playbackinfo/", [["delayMs": 300, "repeat": 10_000]])
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        _ = try await h.call("catalog.refresh")
        _ = try await h.call("catalog.subscribe", ["sourceId": "src-music", "subscribed": true])
        for category in ["cat-focus", "cat-workout", "cat-singles"] {
            _ = try await h.call("catalog.select", ["categoryId": .string(category), "selected": true])
        }
        try await waitItems(h, "prepositioning under way") { all in
            all.values.contains { $0["state"]?.stringValue == "downloading" } && all.values.filter { $0["token"] != .null }.count >= 2
        }
        let queuedBeforeKill = try await items(h).values.filter { $0["token"] != .null }.count
        print("kill -9 with \(queuedBeforeKill) of 9 items queued")
        h.kill9()
        _ = try await h.api.delete("/_control/faults")
        try h.start()
        let music = ["it-tr-9-01", "it-tr-9-02", "it-tr-9-03", "it-tr-10-01", "it-tr-10-02", "it-tr-10-03", "it-tr-1", "it-tr-2", "it-tr-3"]
        let done = try await waitItems(h, "all music cached", timeout: 90) { all in
            music.allSatisfy { all[$0]?["state"]?.stringValue == "cached" }
        }
        XCTAssertEqual(done["it-vid-1"]?["state"], "discovered")
        // One request per item, none twice, every file whole.
        let requests = try await h.call("offline.list")["items"]?.arrayValue ?? []
        XCTAssertEqual(requests.compactMap { $0["productId"]?.stringValue }.sorted(), music.map { String($0.dropFirst(3)) }.sorted())
        for id in music {
            let productState = try await h.call("offline.state", ["productId": .string(String(id.dropFirst(3)))])["state"]
            XCTAssertEqual(productState, "OFFLINED_AND_VALID")
        }
        XCTAssertTrue(h.mediaFiles().filter { $0.hasSuffix(".part") }.isEmpty, "\(h.mediaFiles())")
    }
}
