import Foundation
import TestSupport
import Wire
import XCTest

/// The reporter delivering to an HTTPS edge (nginx with a private CA and HTTP/2) in front of the
/// reference origin: through `originCAFile`, over HTTP/2; without it, a `TLSFailed` attempt that
/// waits at least a minute, never probed as an unreachable origin.
final class HTTPSDeliveryTests: XCTestCase {
    func testPlaysAreDeliveredOverHTTP2ThroughAPrivateCA() async throws {
        let origin = try OriginProcess.start()
        defer { origin.discard() }
        let edge = try TLSEdge(upstreamPort: origin.port)
        defer { edge.discard() }
        let reporter = try ReporterUnderTest(origin: edge.baseURL, topLevel: ["originCAFile": edge.caFile])
        defer {
            reporter.kill9()
            reporter.dir.remove()
        }
        try reporter.start()
        let client = try await reporter.client()
        _ = try await client.call("playlog.record", ["event": Records.play()])
        let done = try await waitForStatus(reporter, "the play delivered") { $0["pending"]?.intValue == 0 }
        XCTAssertEqual(done["delivered"]?.intValue, 1)
        let posts = edge.requests().filter { $0.path == "/v1/plays" }
        XCTAssertEqual(posts.map(\.proto), ["HTTP/2.0"], "\(edge.requests())")
        XCTAssertEqual(posts.map(\.status), [200])
        await client.close()
    }

    func testAnUntrustedEdgeIsTLSFailedAndWaitsAMinute() async throws {
        let origin = try OriginProcess.start()
        defer { origin.discard() }
        let edge = try TLSEdge(upstreamPort: origin.port)
        defer { edge.discard() }
        // A short backoff and probe: only the TLS floor can make the wait a minute.
        let reporter = try ReporterUnderTest(origin: edge.baseURL, reporterConfig: ["retryInitialSeconds": 1, "probeIntervalSeconds": 0.1])
        defer {
            reporter.kill9()
            reporter.dir.remove()
        }
        try reporter.start()
        let client = try await reporter.client()
        let events = EventCollector(client)
        _ = try await client.call("events.subscribe", ["topics": ["reporter"]])
        _ = try await client.call("playlog.record", ["event": Records.play()])
        let failed = try await events.wait("DeliveryFailed", timeout: 30) { $0.type == "DeliveryFailed" }
        XCTAssertEqual(failed.data["error"]?["name"]?.stringValue, "TLSFailed", "\(failed.data)")
        XCTAssertEqual(failed.data["error"]?["transportError"]?.stringValue, "TLSFailed")
        XCTAssertTrue(failed.data["error"]?["message"]?.stringValue?.contains("originCAFile") == true, "\(failed.data)")
        XCTAssertGreaterThanOrEqual(failed.data["retryInSeconds"]?.doubleValue ?? 0, 60, "no sooner than a minute")
        let status = try await waitForStatus(reporter, "waiting to retry") { $0["delivery"]?["state"]?.stringValue == "waitingToRetry" }
        XCTAssertEqual(status["pending"]?.intValue, 1)
        XCTAssertGreaterThan(status["delivery"]?["nextAttemptInSeconds"]?.doubleValue ?? 0, 30, "\(status)")
        await client.close()
    }
}
