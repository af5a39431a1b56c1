import Foundation
import HTTPClient
import XCTest

/// HTTPClient against a real HTTP server on loopback: a small Python `http.server` (the same one
/// `python3 -m http.server` runs, which ignores `Range`) with a few extra routes, started per test
/// in a temporary folder.
final class HTTPClientTests: XCTestCase {
    private var server: Process?
    var root: URL!
    var base = ""

    override func setUpWithError() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("cassette-http-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let script = root.appendingPathComponent("server.py")
        try Self.serverScript.write(to: script, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script.path, root.path]
        let stdout = Pipe()
        process.standardOutput = stdout
        try process.run()
        server = process
        // The server prints its port once it listens.
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = stdout.fileHandleForReading.availableData
            guard !chunk.isEmpty else { throw XCTSkip("python3 http server did not start") }
            line.append(chunk)
        }
        let port = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        base = "http://127.0.0.1:\(port)"
    }

    override func tearDownWithError() throws {
        if let server, server.isRunning {
            server.terminate()
            server.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: root)
    }

    // MARK: send

    func testGetReturnsStatusHeadersAndBody() async throws {
        let response = try await HTTPClient().send(HTTPRequest(url: "\(base)/echo?x=1"))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.headers["x-echo"], "yes", "header names are lowercased")
        XCTAssertEqual(response.headers["content-type"], "application/json")
        let echo = try Echo(response.body)
        XCTAssertEqual(echo.method, "GET")
        XCTAssertEqual(echo.path, "/echo?x=1")
    }

    func testPostSendsBodyAndHeaders() async throws {
        let body: [UInt8] = Array("{\"a\":1}".utf8) + [0, 255, 10]
        let request = HTTPRequest(
            method: "POST", url: "\(base)/echo",
            headers: ["Content-Type": "application/json", "X-Cassette-Test": "42"], body: body)
        let echo = try Echo(try await HTTPClient().send(request).body)
        XCTAssertEqual(echo.method, "POST")
        XCTAssertEqual(echo.body, body)
        XCTAssertEqual(echo.headers["x-cassette-test"], "42")
        XCTAssertEqual(echo.headers["content-type"], "application/json")
        XCTAssertNil(echo.headers["expect"])
    }

    func testBodyWithoutContentTypeIsNotLabelledAsForm() async throws {
        let request = HTTPRequest(method: "PUT", url: "\(base)/echo", body: [1, 2, 3])
        let echo = try Echo(try await HTTPClient().send(request).body)
        XCTAssertEqual(echo.method, "PUT")
        XCTAssertEqual(echo.body, [1, 2, 3])
        XCTAssertNil(echo.headers["content-type"])
    }

    func testBasicCredentialsAreSentOnEveryRequest() async throws {
        let client = HTTPClient(credentials: BasicCredentials(token: "client-token", secret: "s3cret"))
        let expected = "Basic " + Data("client-token:s3cret".utf8).base64EncodedString()
        for _ in 0..<2 {
            let echo = try Echo(try await client.send(HTTPRequest(url: "\(base)/echo")).body)
            XCTAssertEqual(echo.headers["authorization"], expected)
        }
    }

    func testErrorStatusIsAResponseNotAnError() async throws {
        let response = try await HTTPClient().send(HTTPRequest(url: "\(base)/status/404"))
        XCTAssertEqual(response.status, 404)
        XCTAssertEqual(String(decoding: response.body, as: UTF8.self), "{\"status\": 404}")
        let missing = try await HTTPClient().send(HTTPRequest(url: "\(base)/no-such-file"))
        XCTAssertEqual(missing.status, 404)
    }

    func testConnectionRefusedThrowsConnectionFailed() async throws {
        let port = try unusedPort()
        do {
            _ = try await HTTPClient().send(HTTPRequest(url: "http://127.0.0.1:\(port)/echo"))
            XCTFail("expected an error")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.name, "ConnectionFailed")
            XCTAssertTrue(error.isTransient)
            XCTAssertFalse(error.message.isEmpty)
        }
    }

    func testInvalidURLThrowsInvalidURL() async throws {
        for url in ["not a url", "ftp://127.0.0.1/file"] {
            do {
                _ = try await HTTPClient().send(HTTPRequest(url: url))
                XCTFail("expected an error for \(url)")
            } catch let error as HTTPClientError {
                XCTAssertEqual(error.name, "InvalidURL", "\(url): \(error)")
            }
        }
    }

    func testSlowResponseThrowsTimeout() async throws {
        let started = ContinuousClock.now
        do {
            _ = try await HTTPClient().send(HTTPRequest(url: "\(base)/slow", timeoutSeconds: 0.5))
            XCTFail("expected a timeout")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.name, "Timeout")
        }
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(2.5))
    }

    func testCancellingTheTaskAbortsTheTransfer() async throws {
        let client = HTTPClient()
        let url = "\(base)/slow"
        let task = Task { try await client.send(HTTPRequest(url: url, timeoutSeconds: 10)) }
        try await Task.sleep(for: .milliseconds(200))
        let started = ContinuousClock.now
        task.cancel()
        do {
            _ = try await task.value
            XCTFail("expected cancellation")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.name, "Cancelled")
        }
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(2.5))
    }

    func testConcurrentRequestsBeyondThePoolSizeAllComplete() async throws {
        var configuration = HTTPClient.Configuration()
        configuration.maxConcurrentTransfers = 2
        let client = HTTPClient(configuration: configuration)
        let url = "\(base)/echo"
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 0..<8 {
                group.addTask { try await client.send(HTTPRequest(url: "\(url)?n=\(i)")).status }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        XCTAssertEqual(statuses, Array(repeating: 200, count: 8))
    }

    // MARK: redirects

    func testSameOriginRedirectIsFollowedWithCredentials() async throws {
        let client = HTTPClient(credentials: BasicCredentials(token: "t", secret: "s"))
        let response = try await client.send(HTTPRequest(url: "\(base)/redirect/same"))
        XCTAssertEqual(response.status, 200)
        XCTAssertNotNil(try Echo(response.body).headers["authorization"])
    }

    func testRedirectToAnotherHostIsNotFollowedByDefault() async throws {
        let response = try await HTTPClient().send(HTTPRequest(url: "\(base)/redirect/other"))
        XCTAssertEqual(response.status, 302)
        XCTAssertTrue(response.headers["location"]?.hasPrefix("http://localhost:") ?? false)
    }

    func testRedirectToAnotherHostDropsCredentialsWhenAllowed() async throws {
        var configuration = HTTPClient.Configuration()
        configuration.redirects = .any(max: 3)
        let client = HTTPClient(credentials: BasicCredentials(token: "t", secret: "s"), configuration: configuration)
        let response = try await client.send(HTTPRequest(url: "\(base)/redirect/other"))
        XCTAssertEqual(response.status, 200)
        XCTAssertNil(try Echo(response.body).headers["authorization"])
    }

    func testRedirectLoopThrowsTooManyRedirects() async throws {
        do {
            _ = try await HTTPClient().send(HTTPRequest(url: "\(base)/redirect/loop"))
            XCTFail("expected an error")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.name, "TooManyRedirects")
        }
    }

    // MARK: download

    func testDownloadWritesTheFileAndReportsProgress() async throws {
        let content = try makeFile("track.bin", size: 300_000)
        let target = root.appendingPathComponent("out.bin").path
        let reported = Reported()
        let result = try await HTTPClient().download(HTTPRequest(url: "\(base)/track.bin"), to: target, resumeFrom: 0) {
            reported.record($0, $1)
            return true
        }
        XCTAssertEqual(result.status, 200)
        XCTAssertFalse(result.resumed)
        XCTAssertEqual(result.bytesWritten, 300_000)
        XCTAssertEqual(result.fileSize, 300_000)
        XCTAssertEqual(result.expectedSize, 300_000)
        XCTAssertTrue(result.isComplete)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: target)), content)
        XCTAssertEqual(reported.last?.0, 300_000)
        XCTAssertEqual(reported.last?.1, 300_000)
    }

    func testResumeFromServerIgnoringRangeRewritesFromZero() async throws {
        let content = try makeFile("plain.bin", size: 100_000)
        let target = root.appendingPathComponent("partial.bin")
        // A stale partial file with wrong bytes: a 200 must replace all of it.
        try Data(repeating: 0xEE, count: 40_000).write(to: target)
        let result = try await HTTPClient().download(
            HTTPRequest(url: "\(base)/plain.bin"), to: target.path,
            resumeFrom: 40_000
        ) { _, _ in true }
        XCTAssertEqual(result.status, 200)
        XCTAssertFalse(result.resumed)
        XCTAssertEqual(result.bytesWritten, 100_000)
        XCTAssertEqual(try Data(contentsOf: target), content)
    }

    func testResumeWith206AppendsAfterTheOffset() async throws {
        let content = try makeFile("ranged.bin", size: 100_000)
        let target = root.appendingPathComponent("partial.bin")
        try content.prefix(30_000).write(to: target)
        let client = HTTPClient()
        let echo = try Echo(try await client.send(HTTPRequest(url: "\(base)/echo")).body)
        XCTAssertNil(echo.headers["range"])
        let result = try await client.download(
            HTTPRequest(url: "\(base)/ranged/ranged.bin"), to: target.path,
            resumeFrom: 30_000
        ) { _, _ in true }
        XCTAssertEqual(result.status, 206)
        XCTAssertTrue(result.resumed)
        XCTAssertEqual(result.bytesWritten, 70_000)
        XCTAssertEqual(result.fileSize, 100_000)
        XCTAssertEqual(result.expectedSize, 100_000)
        XCTAssertTrue(result.isComplete)
        XCTAssertEqual(try Data(contentsOf: target), content)
    }

    func testShortBodyThrowsPartialBodyAndKeepsTheBytes() async throws {
        let content = try makeFile("cut.bin", size: 200_000)
        let target = root.appendingPathComponent("cut.part")
        let client = HTTPClient()
        do {
            _ = try await client.download(
                HTTPRequest(url: "\(base)/truncated/cut.bin"), to: target.path,
                resumeFrom: 0
            ) { _, _ in true }
            XCTFail("expected PartialBody")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.name, "PartialBody")
            XCTAssertTrue(error.isTransient)
            XCTAssertEqual(error.bytesOnDisk, 100_000)
        }
        XCTAssertEqual(try Data(contentsOf: target), content.prefix(100_000))

        // …and a retry resumes from what is on disk.
        let result = try await client.download(
            HTTPRequest(url: "\(base)/ranged/cut.bin"), to: target.path,
            resumeFrom: 100_000
        ) { _, _ in true }
        XCTAssertEqual(result.status, 206)
        XCTAssertEqual(try Data(contentsOf: target), content)
    }

    func testDownloadErrorStatusLeavesTheFileAlone() async throws {
        let target = root.appendingPathComponent("keep.bin")
        try Data([1, 2, 3]).write(to: target)
        let result = try await HTTPClient().download(
            HTTPRequest(url: "\(base)/status/403"), to: target.path,
            resumeFrom: 3
        ) { _, _ in true }
        XCTAssertEqual(result.status, 403)
        XCTAssertEqual(result.bytesWritten, 0)
        XCTAssertFalse(result.isComplete)
        XCTAssertEqual(String(decoding: result.body, as: UTF8.self), "{\"status\": 403}")
        XCTAssertEqual(try Data(contentsOf: target), Data([1, 2, 3]))
    }

    func testProgressReturningFalseStopsTheDownload() async throws {
        _ = try makeFile("big.bin", size: 2_000_000)
        let target = root.appendingPathComponent("stopped.bin").path
        do {
            _ = try await HTTPClient().download(HTTPRequest(url: "\(base)/big.bin"), to: target, resumeFrom: 0) { written, _ in
                written < 100_000
            }
            XCTFail("expected Cancelled")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.name, "Cancelled")
            XCTAssertLessThan(error.bytesOnDisk ?? .max, 2_000_000)
        }
    }

    // MARK: direct writes (a large body past the page cache)

    /// A client that writes every body of at least `threshold` bytes with O_DIRECT.
    private func directClient(threshold: Int = 1) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.downloadDirectBytes = threshold
        return HTTPClient(configuration: configuration)
    }

    func testDirectWritesLeaveTheSameFileWithAnUnalignedTail() async throws {
        // Several 2 MiB chunks and a tail that is no multiple of a block.
        let content = try makeFile("large.bin", size: 5 * 1_048_576 + 12_345)
        let target = root.appendingPathComponent("large.out").path
        let reported = Reported()
        let result = try await directClient().download(HTTPRequest(url: "\(base)/large.bin"), to: target, resumeFrom: 0) {
            reported.record($0, $1)
            return true
        }
        XCTAssertEqual(result.status, 200)
        XCTAssertEqual(result.bytesWritten, Int64(content.count))
        XCTAssertEqual(result.fileSize, Int64(content.count))
        XCTAssertEqual(reported.last?.0, Int64(content.count))
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: target)), content)
    }

    func testDirectWritesOnAShortBodyKeepEveryByteReceivedThenResume() async throws {
        let content = try makeFile("cutlarge.bin", size: 6 * 1_048_576 + 4_001)
        let target = root.appendingPathComponent("cutlarge.part")
        let client = directClient()
        do {
            _ = try await client.download(
                HTTPRequest(url: "\(base)/truncated/cutlarge.bin"), to: target.path,
                resumeFrom: 0
            ) { _, _ in true }
            XCTFail("expected PartialBody")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.name, "PartialBody")
            // Every byte received is in the file, the ones still in memory when the body broke off included.
            XCTAssertEqual(error.bytesOnDisk, Int64(content.count / 2))
        }
        XCTAssertEqual(try Data(contentsOf: target), content.prefix(content.count / 2))

        // The retry starts at an offset that is no multiple of a block: it writes through the page cache.
        let result = try await client.download(
            HTTPRequest(url: "\(base)/ranged/cutlarge.bin"), to: target.path,
            resumeFrom: Int64(content.count / 2)
        ) { _, _ in true }
        XCTAssertEqual(result.status, 206)
        XCTAssertEqual(result.fileSize, Int64(content.count))
        XCTAssertEqual(try Data(contentsOf: target), content)
    }

    func testDirectWritesStoppedMidwayKeepWhatArrivedAndResumeAligned() async throws {
        let content = try makeFile("stop.bin", size: 8 * 1_048_576)
        let target = root.appendingPathComponent("stop.part")
        let client = directClient()
        var onDisk: Int64 = 0
        do {
            _ = try await client.download(HTTPRequest(url: "\(base)/stop.bin"), to: target.path, resumeFrom: 0) { written, _ in
                written < 3 * 1_048_576
            }
            XCTFail("expected Cancelled")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.name, "Cancelled")
            onDisk = error.bytesOnDisk ?? -1
        }
        let kept = try Data(contentsOf: target)
        XCTAssertEqual(Int64(kept.count), onDisk, "bytesOnDisk is what the file holds")
        XCTAssertGreaterThanOrEqual(kept.count, 3 * 1_048_576)
        XCTAssertEqual(kept, content.prefix(kept.count))

        // From a block boundary (the file cut back to one) the rest goes to the disk directly again.
        let aligned = Int64(kept.count / 4096 * 4096)
        let result = try await client.download(
            HTTPRequest(url: "\(base)/ranged/stop.bin"), to: target.path,
            resumeFrom: aligned
        ) { _, _ in true }
        XCTAssertEqual(result.status, 206)
        XCTAssertEqual(result.bytesWritten, Int64(content.count) - aligned)
        XCTAssertEqual(try Data(contentsOf: target), content)
    }
}
