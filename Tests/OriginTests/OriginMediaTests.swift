import HTTPClient
import TestSupport
import XCTest

@testable import cassette_origin

/// Media serving: ranges, validators and the faults that make a server misbehave.
final class OriginMediaTests: OriginTestCase {
    private func firstItem() async throws -> (url: String, size: Int, sha256: String) {
        let api = try api
        let sync = try api.json(try await api.post("/v1/stations/st-9/offline", ["have": []]))
        let item = try XCTUnwrap(sync.objects("items").first)
        return (try XCTUnwrap(item.string("url")), try XCTUnwrap(item.int("sizeBytes")), try XCTUnwrap(item.string("sha256")))
    }

    func testMediaBodyMatchesTheAdvertisedSizeAndHash() async throws {
        let api = try api
        let item = try await firstItem()
        let full = try await api.get(item.url)
        XCTAssertEqual(full.status, 200)
        XCTAssertEqual(full.body.count, item.size)
        XCTAssertEqual(ContentKeys.sha256(of: full.body), item.sha256)
        XCTAssertEqual(full.headers["content-length"], String(item.size))
        XCTAssertEqual(full.headers["accept-ranges"], "bytes")
        let etag = try XCTUnwrap(full.headers["etag"])
        let unchanged = try await api.get(item.url, headers: ["If-None-Match": etag])
        XCTAssertEqual(unchanged.status, 304)
        XCTAssertTrue(unchanged.body.isEmpty)
    }

    func testRangeRequestGets206AndIgnoreRangeFaultGets200() async throws {
        let api = try api
        let item = try await firstItem()
        let full = try await api.get(item.url).body

        let partial = try await api.get(item.url, headers: ["Range": "bytes=10-19"])
        XCTAssertEqual(partial.status, 206)
        XCTAssertEqual(partial.body, Array(full[10..<20]))
        XCTAssertEqual(partial.headers["content-range"], "bytes 10-19/\(item.size)")

        let tail = try await api.get(item.url, headers: ["Range": "bytes=\(item.size - 5)-"])
        XCTAssertEqual(tail.status, 206)
        XCTAssertEqual(tail.body, Array(full.suffix(5)))

        let beyond = try await api.get(item.url, headers: ["Range": "bytes=\(item.size)-"])
        XCTAssertEqual(beyond.status, 416)
        XCTAssertEqual(beyond.headers["content-range"], "bytes */\(item.size)")

        try await api.injectFaults("/media/", [["ignoreRange": true]])
        let ignored = try await api.get(item.url, headers: ["Range": "bytes=10-19"])
        XCTAssertEqual(ignored.status, 200)
        XCTAssertEqual(ignored.body, full)

        // The fault was used up: the next ranged request is honoured again.
        let honoured = try await api.get(item.url, headers: ["Range": "bytes=10-19"])
        XCTAssertEqual(honoured.status, 206)
    }

    func testTruncatedBodyEndsBeforeContentLength() async throws {
        let api = try api
        let item = try await firstItem()
        try await api.injectFaults(item.url, [["truncateAfter": 1000]])
        do {
            let response = try await api.get(item.url)
            XCTFail("a body cut at 1000 of \(item.size) bytes was accepted: \(response.status) \(response.body.count)")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .partialBody)
        }
        let whole = try await api.get(item.url)
        XCTAssertEqual(whole.body.count, item.size)
    }

    /// `stallAfter`: the head and that many body bytes, then silence on an open connection (a
    /// client's stall timeout ends it, with what arrived on disk); the next request is served.
    func testStallAfterSendsTheHeadAndSomeBytesThenNothing() async throws {
        let api = try api
        let item = try await firstItem()
        try await api.injectFaults(item.url, [["stallAfter": 1000]])
        let directory = try TestDirectory(prefix: "stall")
        defer { directory.remove() }
        let path = directory.path + "/body"
        let client = HTTPClient(credentials: BasicCredentials(token: "demo", secret: "demo"))
        let started = Date()
        do {
            let result = try await client.download(HTTPRequest(url: try origin.baseURL + item.url, timeoutSeconds: 2), to: path)
            XCTFail("a stalled body was accepted: \(result.status) \(result.fileSize)")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .timeout, "\(error)")
            XCTAssertEqual(error.bytesOnDisk, 1000)
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 30, "the client's stall timeout ended it, not the origin")
        let whole = try await api.get(item.url)
        XCTAssertEqual(whole.body.count, item.size)
    }

    func testUnknownMediaPathIs404() async throws {
        let api = try api
        let traversal = try await api.get("/media/../catalog.json").status
        XCTAssertEqual(traversal, 404)
        let missing = try await api.get("/media/nothing.flac").status
        XCTAssertEqual(missing, 404)
    }
    /// `/_control/head`: an edge whose signed URLs are valid for GET only. HEAD of media,
    /// images and keys is refused with the status asked; GET (and a fault queued for it) is
    /// untouched; DELETE and a reset serve HEAD again; `stats.methods` counts both.
    func testHeadRefusalLeavesGetAlone() async throws {
        let api = try api
        let item = try await firstItem()
        func head(_ path: String) async throws -> Int {
            try await api.anonymous.send(HTTPRequest(method: "HEAD", url: try origin.baseURL + path, timeoutSeconds: 15)).status
        }
        let servedBefore = try await head(item.url)
        XCTAssertEqual(servedBefore, 200)
        let set = try await api.post("/_control/head", ["status": 405], authorized: false)
        XCTAssertEqual(set.status, 200)
        XCTAssertEqual(try api.json(set).object("head").int("status"), 405)
        try await api.injectFaults(item.url, [["ignoreRange": true]])
        let refused = try await head(item.url)
        XCTAssertEqual(refused, 405)
        let refusedImage = try await head("/img/tr-1-poster.png")
        XCTAssertEqual(refusedImage, 405)
        let ranged = try await api.get(item.url, headers: ["Range": "bytes=10-19"])
        XCTAssertEqual(ranged.status, 200, "the queued fault was left for the GET")
        XCTAssertEqual(ranged.body.count, item.size)
        let plainGet = try await api.get(item.url).status
        XCTAssertEqual(plainGet, 200)
        let bad = try await api.post("/_control/head", ["status": 200], authorized: false)
        XCTAssertEqual(bad.status, 400)

        let methods = try await api.stats().object("methods")
        XCTAssertEqual(methods.int("HEAD"), 3)
        XCTAssertGreaterThanOrEqual(methods.int("GET") ?? 0, 2)
        let cleared = try await api.delete("/_control/head")
        XCTAssertEqual(cleared.status, 200)
        let servedAgain = try await head(item.url)
        XCTAssertEqual(servedAgain, 200)
        _ = try await api.post("/_control/head", [:], authorized: false)
        let refusedByDefault = try await head(item.url)
        XCTAssertEqual(refusedByDefault, 403, "403 when no status is named")
        _ = try await api.post("/_control/reset", [:], authorized: false)
        let afterReset = try await head(item.url)
        XCTAssertEqual(afterReset, 200, "a reset serves HEAD again")
    }
}
