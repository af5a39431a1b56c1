import Foundation
import TestSupport
import Wire
import XCTest

/// The PCD/VOC category filters `SearchField:` and `suggestions:` through the downloader's
/// socket, over the reference origin's demo catalog: Music (Focus 3 items, Workout 3, Singles 3),
/// Video (1; Trailers 1), News (none); `src-music` holds the tracks, `src-video` vid-1.
final class CategoryFilterTests: XCTestCase {
    private func categories(_ h: DownloaderHarness, _ filter: String, sort: JSONValue? = nil) async throws -> [String] {
        var params: [String: JSONValue] = ["filter": .string(filter)]
        if let sort { params["sort"] = sort }
        return (try await h.call("catalog.categories", .object(params))["categories"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
    }

    func testSearchFindsCategoriesByNameAndSuggestionsOfferUnselectedOnesWithContent() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        try h.start()
        // Nothing downloads here: only the filters are looked at.
        _ = try await h.call("network.set", ["type": "none"])
        _ = try await h.call("catalog.refresh")

        // The search field: the text anywhere in the name, case and accents aside.
        let trailers = try await categories(h, "search:ra")
        XCTAssertEqual(trailers, ["cat-trailers"])
        let video = try await categories(h, "search:VIDÉO")
        XCTAssertEqual(video, ["cat-video"])
        let withS = try await categories(h, "search:s", sort: [["key": "name"]])
        XCTAssertEqual(withS, ["cat-focus", "cat-music", "cat-news", "cat-singles", "cat-trailers"])
        let none = try await categories(h, "search:zz")
        XCTAssertEqual(none, [])
        for bad in ["search:", "search:   ", "search:" + String(repeating: "a", count: 129), "suggestions:x"] {
            do {
                _ = try await h.call("catalog.categories", ["filter": .string(bad)])
                XCTFail("\(bad) accepted")
            } catch let error as RPCError {
                XCTAssertEqual(error.code, -32602, "\(bad): \(error)")
            }
        }

        // Suggestions: not selected, holding items of a subscribed source; most items first.
        let nothingSubscribed = try await categories(h, "suggestions")
        XCTAssertEqual(nothingSubscribed, [])
        _ = try await h.call("catalog.subscribe", ["sourceId": "src-video", "subscribed": true])
        let videoOnly = try await categories(h, "suggestions")
        XCTAssertEqual(videoOnly, ["cat-video", "cat-trailers"])
        _ = try await h.call("catalog.subscribe", ["sourceId": "src-music", "subscribed": true])
        _ = try await h.call("catalog.select", ["categoryId": "cat-workout", "selected": true])
        let both = try await categories(h, "suggestions")
        XCTAssertEqual(both, ["cat-focus", "cat-singles", "cat-video", "cat-trailers"])
        let byName = try await categories(h, "suggestions", sort: [["key": "name", "ascending": false]])
        XCTAssertEqual(byName, ["cat-video", "cat-trailers", "cat-singles", "cat-focus"])
        print("category filters: search:ra → cat-trailers; suggestions → \(both)")
    }
}
