import Foundation
import HTTPClient
import NIOConcurrencyHelpers
import OriginClient
import TestSupport
import Wire
import XCTest

/// The retry rules, error names, URL checks and server time of `OriginClient`, checked against
/// the real reference origin: requests are counted at the origin, waits are recorded (not slept).
final class OriginClientTests: XCTestCase {
    private var origin: OriginProcess!
    private var api: OriginAPI!
    private let waits = NIOLockedValueBox<[Double]>([])

    override func setUpWithError() throws {
        origin = try OriginProcess.start()
        api = OriginAPI(origin: origin)
        waits.withLockedValue { $0 = [] }
    }

    override func tearDown() {
        origin?.discard()
    }

    private func client(token: String = "demo") throws -> OriginClient {
        let waits = waits
        return try OriginClient(
            baseURL: origin.baseURL + "/", credentials: BasicCredentials(token: token, secret: "demo"),
            sleep: { seconds in waits.withLockedValue { $0.append(seconds) } })
    }

    private func requests(_ path: String) async throws -> Int {
        try await api.stats().object("requests").int(path) ?? 0
    }

    func testServerErrorsAreRetriedNineTimesWhenOffliningWithDoublingDelays() async throws {
        try await api.injectFaults("/v1/stations", [["status": 503, "repeat": 20]])
        do {
            _ = try await client().get("/v1/stations", retry: .offlining)
            XCTFail("expected an error")
        } catch let error as OriginError {
            XCTAssertEqual(error.name, "OriginServerError")
            XCTAssertEqual(error.status, 503)
            XCTAssertEqual(error.code, 4503)
        }
        XCTAssertEqual(waits.withLockedValue { $0 }, [0.5, 1, 2, 4, 8, 16, 32, 60, 60])
        let count = try await requests("/v1/stations")
        XCTAssertEqual(count, 10, "one try and nine retries")
    }

    func testStreamingRetriesThreeTimesAndHonoursRetryAfter() async throws {
        try await api.injectFaults("/v1/stations", [["status": 429, "retryAfter": 7, "repeat": 2], ["status": 502, "repeat": 5]])
        do {
            _ = try await client().get("/v1/stations", retry: .streaming)
            XCTFail("expected an error")
        } catch let error as OriginError {
            XCTAssertEqual(error.status, 502)
        }
        XCTAssertEqual(waits.withLockedValue { $0 }, [7, 7, 2])
        let count = try await requests("/v1/stations")
        XCTAssertEqual(count, 4)
    }

    func testRecoversWhenTheServerComesBackWithinTheBudget() async throws {
        try await api.injectFaults("/v1/stations", [["status": 500, "repeat": 2]])
        let stations = try await client().get("/v1/stations", retry: .offlining)
        XCTAssertNotNil(stations["offlineStations"]?.arrayValue)
        let count = try await requests("/v1/stations")
        XCTAssertEqual(count, 3)
    }

    func testOtherClientErrorsAreNeverRetriedAndNamedFromSubStatus() async throws {
        let cases: [(Int, Int?, String, Int)] = [
            (403, 4032, "ContentNotAvailableInLocation", 4032), (403, 4035, "ContentNotAvailableInLocation", 4035),
            (403, 4033, "ContentNotAvailableForSubscription", 4033), (403, 4010, "MonthlyStreamQuotaExceeded", 4010),
            (403, 4007, "OffliningNotAllowedOnDevice", 4007), (404, nil, "NotFound", 4404),
        ]
        for (status, subStatus, name, code) in cases {
            var fault: [String: Any] = ["status": status]
            if let subStatus { fault["subStatus"] = subStatus }
            try await api.injectFaults("/v1/stations", [fault])
            do {
                _ = try await client().get("/v1/stations", retry: .offlining)
                XCTFail("expected \(name)")
            } catch let error as OriginError {
                XCTAssertEqual(error.name, name)
                XCTAssertEqual(error.rpcError.code, code)
            }
        }
        XCTAssertEqual(waits.withLockedValue { $0 }, [])
        let count = try await requests("/v1/stations")
        XCTAssertEqual(count, cases.count)
    }

    func testWrongCredentialsAreNotAllowedAndSaySo() async throws {
        do {
            _ = try await client(token: "wrong").get("/v1/stations", retry: .offlining)
            XCTFail("expected 401")
        } catch let error as OriginError {
            XCTAssertEqual(error.status, 401)
            XCTAssertEqual(error.name, "Unauthorized")
            XCTAssertEqual(error.code, 4401)
            XCTAssertTrue(error.message.contains("token"), error.message)
        }
    }

    func testNetworkErrorsAreRetriedWithACappedBackoff() async throws {
        try await api.injectFaults("/v1/stations", [["reset": true, "repeat": 8]])
        _ = try await client().get("/v1/stations", retry: .streaming)
        XCTAssertEqual(waits.withLockedValue { $0 }, [0.5, 1, 2, 4, 5, 5, 5, 5])
    }

    func testOneAttemptOnlyWithRetryNone() async throws {
        try await api.injectFaults("/v1/stations", [["reset": true]])
        do {
            _ = try await client().get("/v1/stations", retry: .none)
            XCTFail("expected OriginUnreachable")
        } catch let error as OriginError {
            XCTAssertEqual(error.name, "OriginUnreachable")
            XCTAssertEqual(error.code, 1010)
        }
    }

    func testPersistingServerErrorsWithADeadlineAreOriginUnreachable() async throws {
        try await api.injectFaults("/v1/stations", [["status": 503, "repeat": 20]])
        let policy = RetryPolicy(statusRetries: 3, networkRetries: nil, maxNetworkDelay: 1, deadlineSeconds: 60)
        do {
            _ = try await client().get("/v1/stations", retry: policy)
            XCTFail("expected OriginUnreachable")
        } catch let error as OriginError {
            XCTAssertEqual(error.name, "OriginUnreachable")
            XCTAssertEqual(error.code, 1010)
            XCTAssertEqual(error.status, 503)
            XCTAssertEqual(error.rpcError.code, 1010)
        }
        XCTAssertEqual(waits.withLockedValue { $0 }, [0.5, 1, 2])
    }

    func testADeadlineEndsACallToAnOriginThatNeverAnswers() async throws {
        let silent = try SilentPort()
        let policy = RetryPolicy(statusRetries: 9, networkRetries: nil, maxNetworkDelay: 1, deadlineSeconds: 1)
        let client = try OriginClient(baseURL: silent.url, credentials: nil)
        do {
            _ = try await client.get("/v1/stations", retry: policy)
            XCTFail("expected OriginUnreachable")
        } catch let error as OriginError {
            XCTAssertEqual(error.name, "OriginUnreachable")
            XCTAssertEqual(error.code, 1010)
            XCTAssertEqual(error.transportError, "Timeout")
        }
    }

    /// A socket call's requests share one end (`startingNow`): against an origin that never
    /// answers, the first request takes the whole deadline and the second fails at once.
    func testRequestsOfOneCallShareItsDeadline() async throws {
        let silent = try SilentPort()
        let client = try OriginClient(baseURL: silent.url, credentials: nil)
        let policy = RetryPolicy(statusRetries: 9, networkRetries: nil, maxNetworkDelay: 1, deadlineSeconds: 2).startingNow()
        let started = ContinuousClock.now
        for path in ["/v1/stations", "/v1/catalog/items"] {
            do {
                _ = try await client.get(path, retry: policy)
                XCTFail("expected OriginUnreachable")
            } catch let error as OriginError {
                XCTAssertEqual(error.name, "OriginUnreachable", path)
            }
        }
        let elapsed = started.duration(to: .now)
        XCTAssertLessThan(elapsed, .milliseconds(3_500), "two requests of one 2 s call took \(elapsed)")
    }

    /// A request to an origin that never answers ends soon after its task is cancelled (curl's
    /// progress callback sees the flag), as `CancellationError`: a stop is not the origin failing.
    func testCancellingARequestToASilentOriginThrowsCancellation() async throws {
        let silent = try SilentPort()
        let client = try OriginClient(baseURL: silent.url, credentials: nil)
        let call = Task { try await client.get("/v1/stations", retry: .none) }
        try await Task.sleep(nanoseconds: 300_000_000)
        let cancelled = ContinuousClock.now
        call.cancel()
        do {
            _ = try await call.value
            XCTFail("expected the cancelled call to throw")
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)")
        }
        let elapsed = cancelled.duration(to: .now)
        XCTAssertLessThan(elapsed, .seconds(3), "the request ended \(elapsed) after its cancellation")
    }

    func testCancellationEndsTheRetriesOfAnUnreachableOrigin() async throws {
        let refusing = try RefusingPort()
        let client = try OriginClient(baseURL: refusing.url, credentials: nil)
        let call = Task { try await client.get("/v1/stations", retry: .offlining) }
        try await Task.sleep(nanoseconds: 300_000_000)
        call.cancel()
        do {
            _ = try await call.value
            XCTFail("expected the cancelled call to throw")
        } catch {
            XCTAssertTrue(error is CancellationError || (error as? OriginError)?.transportError == "Cancelled", "\(error)")
        }
    }

    func testAnUnreachableOriginIsNamed() async throws {
        let stopped = try OriginProcess.start()
        stopped.discard()
        let closed = try OriginClient(baseURL: stopped.baseURL, credentials: nil)
        do {
            _ = try await closed.get("/v1/stations", retry: .none)
            XCTFail("expected OriginUnreachable")
        } catch let error as OriginError {
            XCTAssertEqual(error.name, "OriginUnreachable")
            XCTAssertEqual(error.transportError, "ConnectionFailed")
        }
    }

    func testKeepsTheServerTimeAndPostsJSON() async throws {
        let client = try client()
        XCTAssertNil(client.lastServerTime)
        let answer = try await client.post(
            "/v1/stations/st-9/offline", body: ["targetMinutes": .null, "have": [], "played": []],
            retry: .offlining)
        XCTAssertEqual(answer["station"]?["id"]?.stringValue, "st-9")
        let sample = try XCTUnwrap(client.lastServerTime)
        let said = try XCTUnwrap(answer["serverTime"]?.stringValue.flatMap(UTCTimestamp.parseRFC3339))
        XCTAssertEqual(sample.serverTime.timeIntervalSince1970, said.timeIntervalSince1970, accuracy: 1)
    }

    func testHTTPDateHeadersAreReadAsUTC() {
        // Seconds since 1970 as Foundation's DateFormatter reads them, leap days and centuries included.
        let known: [(String, TimeInterval)] = [
            ("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_777), ("Thu, 29 Feb 2024 23:59:59 GMT", 1_709_251_199),
            ("Sat, 01 Jan 2000 00:00:00 GMT", 946_684_800), ("Mon, 01 Mar 2100 12:00:00 GMT", 4_107_585_600),
        ]
        for (text, seconds) in known {
            XCTAssertEqual(ServerTimeSample.parseHTTPDate(text)?.timeIntervalSince1970, seconds, text)
        }
        XCTAssertNil(ServerTimeSample.parseHTTPDate("Sun, 06 Foo 1994 08:49:37 GMT"))
        XCTAssertNil(ServerTimeSample.parseHTTPDate("yesterday"))
    }

    func testURLsMustStayOnTheOrigin() throws {
        let client = try client()
        XCTAssertEqual(try client.resolveURL("/media/a.flac"), origin.baseURL + "/media/a.flac")
        XCTAssertEqual(try client.resolveURL(origin.baseURL + "/media/a.flac"), origin.baseURL + "/media/a.flac")
        for hostile in [
            "file:///etc/passwd", "http://example.com/media/a.flac", "//example.com/a",
            "https://127.0.0.1:\(origin.port)/a", "http://127.0.0.1:1/a", "ftp://127.0.0.1/a", "media/../x",
        ] {
            XCTAssertThrowsError(try client.resolveURL(hostile), hostile) { error in
                XCTAssertEqual((error as? OriginError)?.name, "ForeignURL", hostile)
            }
        }
    }

    /// The origin URL's shape is checked at start; curl's parser, opened at first use, has the
    /// last word (a shape it refuses is `InvalidOriginURL` then).
    func testOriginURLIsCheckedAtStartAndParsedByCurlAtFirstUse() throws {
        for bad in ["ftp://127.0.0.1/", "127.0.0.1:9", "http://", "http:///v1", "http://exa mple.com", ""] {
            XCTAssertThrowsError(try OriginClient(baseURL: bad, credentials: nil), bad) { error in
                XCTAssertEqual((error as? OriginError)?.name, "InvalidOriginURL", bad)
            }
        }
        let upper = try OriginClient(baseURL: "HTTP://127.0.0.1:9/", credentials: nil)
        XCTAssertEqual(upper.mediaURL("/media/a.flac"), "http://127.0.0.1:9/media/a.flac")
        let refused = try OriginClient(baseURL: "http://[zz]:9", credentials: nil)
        XCTAssertThrowsError(try refused.resolveURL("/media/a.flac")) { error in
            XCTAssertEqual((error as? OriginError)?.name, "InvalidOriginURL")
        }
    }

    func testIdsArePlainTokens() {
        for good in ["tr-9-01", "A.b_c-1", String(repeating: "x", count: 128)] { XCTAssertTrue(OriginID.isValid(good), good) }
        for bad in ["", "..", ".", "a/b", "a b", "é", String(repeating: "x", count: 129), "a\0b", "../etc"] {
            XCTAssertFalse(OriginID.isValid(bad), bad)
        }
    }

    func testDownloadResumesAfterATruncatedBodyWithRange() async throws {
        let path = origin.dataDirectory.appendingPathComponent("dl.bin").path
        let media = try api.json(try await api.get("/v1/playbackinfo/tr-9-01?mode=offline"))
        let url = try client().resolveURL(try XCTUnwrap(media.object("manifest").string("url")))
        let size = try XCTUnwrap(media.object("manifest").int("sizeBytes"))
        try await api.injectFaults(URL(string: url)!.path, [["truncateAfter": size / 3]])
        let result = try await client().download(url, to: path, retry: .offlining)
        XCTAssertEqual(result.status, 206, "the second request resumed with Range")
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int, size)
        XCTAssertEqual(waits.withLockedValue { $0 }, [0.5])
    }
}
