import Foundation
import HTTPClient
import OriginClient
import TestSupport
import Wire
import XCTest

/// HTTPClient and OriginClient against an HTTPS edge (nginx with a private CA and HTTP/2, in
/// front of the reference origin): what is negotiated, what is shared between handles, and how
/// each TLS failure is named.
final class HTTPClientTLSTests: XCTestCase {
    private var origin: OriginProcess!
    private var edge: TLSEdge!

    override func setUpWithError() throws {
        origin = try OriginProcess.start()
        edge = try TLSEdge(upstreamPort: origin.port)
    }

    override func tearDown() {
        edge?.discard()
        origin?.discard()
    }

    private let credentials = BasicCredentials(token: "demo", secret: "demo")

    private func client(_ transport: HTTPClient.Transport, maxIdleHandles: Int = 4) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.transport = transport
        configuration.maxIdleHandles = maxIdleHandles
        return HTTPClient(credentials: credentials, configuration: configuration)
    }

    private func stations(_ client: HTTPClient) async throws -> HTTPResponse {
        try await client.send(HTTPRequest(url: edge.baseURL + "/v1/stations", timeoutSeconds: 10))
    }

    func testHTTP2IsNegotiatedWithTheEdgeThroughThePrivateCA() async throws {
        let response = try await stations(client(.init(caFile: edge.caFile)))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.httpVersion, "2", "ALPN chose HTTP/2")
        XCTAssertEqual(edge.requests().last?.proto, "HTTP/2.0")
    }

    func testPlainHTTPStaysOnHTTP1() async throws {
        let response = try await client(.init()).send(HTTPRequest(url: origin.baseURL + "/v1/stations", timeoutSeconds: 10))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.httpVersion, "1.1")
    }

    /// Handles share the TLS session cache: a second handle's new connection resumes the TLS
    /// session the first one negotiated. The first handle is held busy (its download waits in
    /// its progress callback) so that the second request needs a handle of its own.
    func testANewHandleResumesTheTLSSessionOfAnother() async throws {
        let http = client(.init(caFile: edge.caFile))
        let first = try await stations(http).status
        XCTAssertEqual(first, 200)
        let hold = HoldGate()
        let file = edge.folder + "/held.json"
        let request = HTTPRequest(url: edge.baseURL + "/v1/stations", timeoutSeconds: 30)
        let held = Task { [http, hold] in
            try await http.download(request, to: file) { _, _ in
                hold.arriveAndWait()
                return true
            }
        }
        try await waitUntil("the first handle's download to reach its progress callback") { hold.arrived }
        let second = try await stations(http).status
        XCTAssertEqual(second, 200)
        hold.release()
        let third = try await held.value.status
        XCTAssertEqual(third, 200)
        try await waitUntil("nginx to log the three requests: \(edge.requests())") { edge.requests().count == 3 }
        let requests = edge.requests()
        // nginx logs each request as it ends, the held one before the second handle's.
        XCTAssertEqual(
            requests.map(\.sessionReused).sorted(), [".", ".", "r"],
            "the first handle's connection (a full handshake, used twice), the second handle's resumption: \(requests)")
    }

    func testAnUntrustedCertificateIsTLSFailedNotAConnectionFailure() async throws {
        do {
            _ = try await stations(client(.init()))
            XCTFail("the system's store does not know the private CA")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.code, .tlsFailed, "\(error)")
            XCTAssertEqual(error.tlsFailure, .certificate, "\(error)")
            XCTAssertFalse(error.isTransient)
        }
    }

    func testPinsAreCheckedAgainstTheEdgesKey() async throws {
        let wrong = "sha256//" + Data(repeating: 1, count: 32).base64EncodedString()
        do {
            _ = try await stations(client(.init(caFile: edge.caFile, pinnedPublicKey: wrong)))
            XCTFail("a pin that matches nothing refuses the edge")
        } catch let error as HTTPClientError {
            XCTAssertEqual(error.tlsFailure, .pinnedKey, "\(error)")
        }
        let pinned = client(.init(caFile: edge.caFile, pinnedPublicKey: wrong + ";" + edge.publicKeyPin))
        let status = try await stations(pinned).status
        XCTAssertEqual(status, 200, "one matching pin among several is enough")
    }

    func testTheConfiguredProxyCarriesTheTraffic() async throws {
        let proxy = try ConnectProxy()
        defer { proxy.discard() }
        let response = try await stations(client(.init(caFile: edge.caFile, proxy: proxy.url)))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.httpVersion, "2", "HTTP/2 inside the tunnel")
        XCTAssertEqual(proxy.connects, ["127.0.0.1:\(edge.port)"])
    }

    /// OriginClient names the failure `TLSFailed` (1013), tells what to check, and does not
    /// retry it within the call.
    func testOriginClientAnswersTLSFailedWithWhatToCheck() async throws {
        let sleeps = SleepLog()
        let client = try OriginClient(
            baseURL: edge.baseURL, credentials: credentials,
            sleep: { seconds in sleeps.add(seconds) })
        do {
            _ = try await client.get("/v1/stations", retry: .offlining)
            XCTFail("untrusted")
        } catch let error as OriginError {
            XCTAssertEqual(error.name, "TLSFailed")
            XCTAssertEqual(error.code, 1013)
            XCTAssertEqual(error.transportError, "TLSFailed")
            XCTAssertTrue(error.isTLSFailure && error.isOriginFailing)
            XCTAssertEqual(error.rpcError.code, RPCErrorKind.tlsFailed.code)
            for hint in ["originCAFile", "originPinnedPublicKey", "clock"] {
                XCTAssertTrue(error.message.contains(hint), "names \(hint): \(error.message)")
            }
            XCTAssertEqual(RetryPolicy.minimumDelay(after: error), 60)
        }
        XCTAssertEqual(sleeps.all, [], "a TLS failure is not retried within the call")
    }

    func testTransportSettingsAreCheckedWithoutCurl() throws {
        XCTAssertEqual(
            HTTPClient.Transport(caFile: edge.caFile, pinnedPublicKey: edge.publicKeyPin, proxy: "socks5h://127.0.0.1:1080")
                .problems(), [])
        let bad = HTTPClient.Transport(caFile: "/nonexistent/ca.pem", pinnedPublicKey: "sha256//abc", proxy: "ftp://proxy:21")
        XCTAssertEqual(bad.problems().map(\.field), [.caFile, .pinnedPublicKey, .proxy])
        let notPEM = edge.folder + "/not-a-ca.txt"
        try "no certificate here\n".write(toFile: notPEM, atomically: true, encoding: .utf8)
        XCTAssertNotNil(HTTPClient.Transport(caFile: notPEM).problems().first, "a file with no certificate")
        XCTAssertNotNil(HTTPClient.Transport(caFile: "ca.pem").problems().first, "a relative path")
        XCTAssertNotNil(HTTPClient.Transport(pinnedPublicKey: edge.publicKeyPin + "; " + edge.publicKeyPin).problems().first)
        XCTAssertNotNil(HTTPClient.Transport(proxy: "http://").problems().first)
        XCTAssertNotNil(HTTPClient.Transport(proxy: "http://proxy:99999").problems().first)
        XCTAssertEqual(HTTPClient.Transport(proxy: "http://user:pw@[::1]:3128/").problems(), [])
    }
}

private final class SleepLog: @unchecked Sendable {
    private let lock = NSLock()
    private var sleeps: [Double] = []
    func add(_ seconds: Double) { lock.withLock { sleeps.append(seconds) } }
    var all: [Double] { lock.withLock { sleeps } }
}

/// Holds a transfer thread in a download's progress callback until the test releases it.
private final class HoldGate: @unchecked Sendable {
    private let condition = NSCondition()
    private var hasArrived = false
    private var released = false

    var arrived: Bool { condition.withLock { hasArrived } }

    /// On the transfer thread: says it is here, then waits for `release` (the first time only).
    func arriveAndWait() {
        condition.withLock {
            hasArrived = true
            while !released { condition.wait() }
        }
    }

    func release() {
        condition.withLock {
            released = true
            condition.broadcast()
        }
    }
}
