import Foundation
import MediaDecoder
import OriginClient
import TestSupport
import XCTest

@testable import player

/// The HTTP cache: keyed by URL path only, Cache-Control honoured, bounded, never holding a
/// partial body.
final class StreamingCacheTests: XCTestCase {
    func testSecondPlayIsServedFromDiskEvenWithAnotherQueryString() async throws {
        let api = try await StreamingFixtures.origin()
        let fixture = try CatalogFixture()
        let cache = try fixture.cache()
        let resolver = fixture.resolver(origin: try StreamingFixtures.client(api), cache: cache)
        let expected = try StreamingFixtures.originMedia(api, "tr-2.m4a")

        let first = try await resolver.resolve(productId: "tr-2", quality: nil, offlineMode: false, events: { _ in })
        XCTAssertEqual(first.kind, "stream")
        await assertSameBytes(try await StreamingFixtures.readAll(first.source), expected)
        try await waitUntil { cache.totalBytes == Int64(expected.count) }
        first.source.close()
        let mediaAfterFirst = try await StreamingFixtures.requests(api)["/media/tr-2.m4a"] ?? 0
        XCTAssertGreaterThanOrEqual(mediaAfterFirst, 1)

        let second = try await resolver.resolve(productId: "tr-2", quality: nil, offlineMode: false, events: { _ in })
        XCTAssertEqual(second.kind, "cache")
        await assertSameBytes(
            try await StreamingFixtures.decodeAll(second.source),
            try StreamingFixtures.decodeAll(path: api.origin.dataDirectory.appendingPathComponent("media/tr-2.m4a").path))

        // The same path with a different signature in the query is the same entry.
        let client = try StreamingFixtures.client(api)
        let signed = try await HTTPStreamSource.open(
            url: api.origin.baseURL + "/media/tr-2.m4a?sig=other&exp=1", origin: client,
            cache: cache, declaredSize: nil, events: { _ in })
        XCTAssertTrue(signed is FileByteSource)
        await assertSameBytes(try await StreamingFixtures.readAll(signed), expected)

        let requests = try await StreamingFixtures.requests(api)
        XCTAssertEqual(requests["/media/tr-2.m4a"], mediaAfterFirst, "no media request after the first play")
        XCTAssertEqual(requests["/v1/playbackinfo/tr-2"], 2, "playbackinfo is no-store: asked each time")
    }

    func testStaleEntryIsRevalidatedWithItsETag() async throws {
        let api = try await StreamingFixtures.origin()
        let fixture = try CatalogFixture()
        let cache = try fixture.cache()
        let client = try StreamingFixtures.client(api)
        let url = api.origin.baseURL + "/media/tr-1.flac"
        let stream = try await HTTPStreamSource.open(url: url, origin: client, cache: cache, declaredSize: nil, events: { _ in })
        let expected = try await StreamingFixtures.readAll(stream)
        try await waitUntil { cache.lookup(path: "/media/tr-1.flac") != nil }
        stream.close()
        guard case .fresh(let entry, _) = cache.lookup(path: "/media/tr-1.flac") else { return XCTFail("not cached") }
        XCTAssertNotNil(entry.etag)
        XCTAssertEqual(entry.maxAge, 86_400)
        guard case .stale = cache.lookup(path: "/media/tr-1.flac", now: Date().addingTimeInterval(90_000)) else {
            return XCTFail("an entry past max-age is stale")
        }

        // Make it stale on disk: rewrite its metadata as stored two days ago.
        let meta = cache.directory + "/" + HTTPCache.key(for: "/media/tr-1.flac") + ".json"
        var stored = try JSONDecoder().decode(HTTPCache.Entry.self, from: Data(contentsOf: URL(fileURLWithPath: meta)))
        stored.storedAt -= 2 * 86_400
        try JSONEncoder().encode(stored).write(to: URL(fileURLWithPath: meta))
        let before = try await StreamingFixtures.requests(api)["/media/tr-1.flac"] ?? 0

        let again = try await HTTPStreamSource.open(url: url, origin: client, cache: cache, declaredSize: nil, events: { _ in })
        XCTAssertTrue(again is FileByteSource, "a 304 keeps the cached body")
        await assertSameBytes(try await StreamingFixtures.readAll(again), expected)
        let after = try await StreamingFixtures.requests(api)["/media/tr-1.flac"] ?? 0
        XCTAssertEqual(after, before + 1, "one conditional request")
        guard case .fresh = cache.lookup(path: "/media/tr-1.flac") else { return XCTFail("fresh again after the 304") }
    }

    func testAStreamClosedHalfwayLeavesNothingInTheCache() async throws {
        let api = try await StreamingFixtures.origin()
        let fixture = try CatalogFixture()
        let cache = try fixture.cache()
        // Slow enough that the stream is still incomplete when it is closed.
        try await api.injectFaults("/media/tr-3.opus", [["bytesPerSecond": 20_000, "repeat": 50]])
        let client = try StreamingFixtures.client(api)
        var options = HTTPStreamSource.Options()
        (options.firstChunk, options.minChunk, options.maxChunk) = (16_384, 16_384, 16_384)
        let source = try await HTTPStreamSource.open(
            url: api.origin.baseURL + "/media/tr-3.opus", origin: client, cache: cache,
            declaredSize: nil, options: options, events: { _ in })
        var buffer = [UInt8](repeating: 0, count: 1000)
        XCTAssertGreaterThan(try buffer.withUnsafeMutableBytes { try source.read(into: $0) }, 0)
        source.close()
        XCTAssertThrowsError(try buffer.withUnsafeMutableBytes { try source.read(into: $0) }) {
            XCTAssertEqual(($0 as? SourceError)?.name, "SourceClosed")
        }
        // The fetch task sees the cancellation within about a second, then removes its file.
        try await waitUntil { try FileManager.default.contentsOfDirectory(atPath: cache.directory).isEmpty }
        XCTAssertNil(cache.lookup(path: "/media/tr-3.opus"))
        XCTAssertEqual(cache.totalBytes, 0)
    }

    func testCacheIsBoundedAndEvictsTheLeastRecentlyUsed() throws {
        let fixture = try CatalogFixture()
        let cache = try fixture.cache(maxBytes: 250)
        func put(_ path: String, _ size: Int, _ control: CacheControl = CacheControl(maxAge: 600)) -> Bool {
            let temporary = cache.temporaryFile(for: path)
            _ = FileManager.default.createFile(atPath: temporary, contents: Data(repeating: 7, count: size))
            return cache.commit(temporary: temporary, path: path, size: Int64(size), etag: "\"e\"", cacheControl: control)
        }
        XCTAssertTrue(put("/media/a", 100))
        usleep(20_000)
        XCTAssertTrue(put("/media/b", 100))
        usleep(20_000)
        XCTAssertNotNil(cache.lookup(path: "/media/a"), "a is now the most recently used")
        usleep(20_000)
        XCTAssertTrue(put("/media/c", 100))
        XCTAssertNil(cache.lookup(path: "/media/b"), "b, the least recently used, was evicted")
        XCTAssertNotNil(cache.lookup(path: "/media/a"))
        XCTAssertNotNil(cache.lookup(path: "/media/c"))
        XCTAssertLessThanOrEqual(cache.totalBytes, 250)

        XCTAssertFalse(put("/media/huge", 251), "larger than the whole cache")
        XCTAssertFalse(put("/media/secret", 10, CacheControl(header: "private, no-store")), "no-store is never stored")
        XCTAssertNil(cache.lookup(path: "/media/secret"))
        XCTAssertTrue(put("/media/nocache", 10, CacheControl(header: "no-cache")))
        guard case .stale = cache.lookup(path: "/media/nocache") else { return XCTFail("no-cache is revalidated before use") }
        let stray = try FileManager.default.contentsOfDirectory(atPath: cache.directory).filter { $0.hasSuffix(".part") }
        XCTAssertEqual(stray, [])
    }

    func testCacheControlAndKeys() {
        XCTAssertEqual(CacheControl(header: "public, max-age=86400"), CacheControl(maxAge: 86_400))
        XCTAssertEqual(CacheControl(header: "private, no-store"), CacheControl(noStore: true))
        XCTAssertEqual(CacheControl(header: "max-age=\"60\", no-cache"), CacheControl(noCache: true, maxAge: 60))
        XCTAssertEqual(CacheControl(header: "max-age=soon"), CacheControl(maxAge: 0))
        XCTAssertEqual(HTTPCache.path(of: "http://h:1/media/a.flac?sig=1#x"), "/media/a.flac")
        XCTAssertEqual(HTTPCache.path(of: "https://h"), "/")
        XCTAssertEqual(HTTPCache.key(for: "/media/a.flac"), HTTPCache.key(for: "/media/a.flac"))
        XCTAssertNotEqual(HTTPCache.key(for: "/media/a.flac"), HTTPCache.key(for: "/media/b.flac"))
    }
}

/// Polls `condition` for up to `seconds`.
func waitUntil(seconds: Double = 10, _ condition: () throws -> Bool, file: StaticString = #filePath, line: UInt = #line) async throws {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return }
        try await Task.sleep(nanoseconds: 20_000_000)
    }
    XCTFail("condition not met within \(seconds) s", file: file, line: line)
}
