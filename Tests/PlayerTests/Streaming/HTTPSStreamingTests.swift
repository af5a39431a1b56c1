import Foundation
import TestSupport
import Wire
import XCTest

/// The player streaming from an HTTPS edge (nginx with a private CA and HTTP/2) in front of the
/// reference origin: through `originCAFile` it plays over HTTP/2; without it, the load answers
/// `TLSFailed` and the error event carries it as its `transportError`.
final class HTTPSStreamingTests: XCTestCase {
    func testAStreamPlaysOverHTTP2ThroughAPrivateCA() async throws {
        let origin = try OriginProcess.start()
        defer { origin.discard() }
        let edge = try TLSEdge(upstreamPort: origin.port)
        defer { edge.discard() }
        let h = try PlayerHarness()
        let client = try await h.start(
            config: #"{"originCAFile":"\#(edge.caFile)"}"#, extraArgs: ["--origin", edge.baseURL],
            environment: PlayerHarness.originCredentials)
        let log = EventLog(client)
        _ = try await h.call("player.load", PlayerHarness.product("tr-1"))
        _ = try await h.call("player.play")
        _ = try await log.untilState("PLAYING")
        let requests = edge.requests()
        XCTAssertTrue(requests.contains { $0.path.hasPrefix("/v1/playbackinfo/tr-1") }, "\(requests)")
        XCTAssertTrue(requests.contains { $0.path.hasPrefix("/media/") }, "\(requests)")
        XCTAssertEqual(requests.filter { $0.proto != "HTTP/2.0" }.map(\.description), [], "every request over HTTP/2")
        _ = try await h.call("player.reset")
        await h.stop()
    }

    func testAnUntrustedEdgeIsTLSFailedInTheAnswerAndTheErrorEvent() async throws {
        let origin = try OriginProcess.start()
        defer { origin.discard() }
        let edge = try TLSEdge(upstreamPort: origin.port)
        defer { edge.discard() }
        let h = try PlayerHarness()
        let client = try await h.start(extraArgs: ["--origin", edge.baseURL], environment: PlayerHarness.originCredentials)
        let log = EventLog(client)
        do {
            _ = try await h.call("player.load", PlayerHarness.product("tr-1"))
            XCTFail("a stream from an untrusted edge does not start")
        } catch let error as RPCError {
            XCTAssertEqual(error.name, "TLSFailed", "\(error)")
            XCTAssertEqual(error.code, 1013)
            XCTAssertTrue(error.message.contains("originCAFile"), error.message)
        }
        let events = try await log.untilState("IDLE")
        let failure = try XCTUnwrap(events.first { $0.type == "TLSFailed" }, "\(events.map(EventLog.describe))")
        XCTAssertEqual(failure.data["transportError"]?.stringValue, "TLSFailed")
        XCTAssertEqual(failure.data["productId"]?.stringValue, "tr-1")
        XCTAssertTrue(failure.data["message"]?.stringValue?.contains("originCAFile") == true, "\(failure.data)")
        await h.stop()
    }
}
