import Foundation
import Glibc
import TestSupport
import Wire
import XCTest

/// docs/protocol.md: `playlog.flush` answers within 10 s whatever the origin does, and a stop
/// cuts off a delivery request the origin never answers.
final class ReporterBoundsTests: XCTestCase {
    /// An origin that accepts the connection and never answers holds a delivery request for its
    /// whole timeout (30 s): the flush answers before 10 s with what it knows, the attempt going
    /// on in the background; SIGTERM then ends the reporter at once, exit status 0, without a
    /// warning (a request cut off by the stop is not a failed attempt).
    func testFlushAnswersWithinTenSecondsAndStopIsPromptWhenTheOriginNeverAnswers() async throws {
        let port = try SilentPort()
        let reporter = try ReporterUnderTest(origin: port.url)
        defer {
            reporter.kill9()
            reporter.dir.remove()
        }
        let process = try reporter.start()
        let client = try await reporter.client()
        _ = try await client.call("playlog.record", ["event": Records.play()])

        let started = ContinuousClock.now
        let outcome = await client.callWithin(20, "playlog.flush")
        let elapsed = started.duration(to: .now)
        guard case .result(let flushed) = outcome else { return XCTFail("playlog.flush: \(outcome)\n\(process.log)") }
        XCTAssertLessThan(elapsed, .seconds(10), "playlog.flush answered after \(elapsed)")
        XCTAssertEqual(flushed["attempted"], true, "\(flushed)")
        XCTAssertEqual(flushed["inProgress"], true, "\(flushed)")
        XCTAssertEqual(flushed["pending"]?.intValue, 1, "\(flushed)")
        XCTAssertEqual(flushed["delivery"]?["state"]?.stringValue, "delivering", "\(flushed)")
        await client.close()

        let stopping = ContinuousClock.now
        process.signal(SIGTERM)
        XCTAssertEqual(try process.waitExit(timeout: 3), 0, "not stopped within 3 s of SIGTERM:\n\(process.log)")
        print("playlog.flush against a silent origin answered after \(elapsed); the stop took \(stopping.duration(to: .now))")
        XCTAssertEqual(process.warningOrWorseLines, [], process.log)
    }

    /// A flush while the origin answers: the attempt ends well within the bound and the answer
    /// says so (`inProgress` false, the records delivered).
    func testFlushThatEndsInTimeIsNotInProgress() async throws {
        let origin = try PinnedOrigin()
        defer { origin.discard() }
        try origin.start()
        let reporter = try ReporterUnderTest(origin: origin.baseURL, reporterConfig: ["retryInitialSeconds": 30])
        defer {
            reporter.kill9()
            reporter.dir.remove()
        }
        try reporter.start()
        try await origin.injectFaults("/v1/plays", [["status": 503]])
        let client = try await reporter.client()
        _ = try await client.call("playlog.record", ["event": Records.play()])
        _ = try await waitForStatus(reporter, "the failed attempt") { $0["delivery"]?["state"]?.stringValue == "waitingToRetry" }
        let flushed = try await client.call("playlog.flush", timeout: .seconds(10))
        XCTAssertEqual(flushed["attempted"], true, "\(flushed)")
        XCTAssertEqual(flushed["inProgress"], false, "\(flushed)")
        XCTAssertEqual(flushed["pending"]?.intValue, 0, "\(flushed)")
        await client.close()
    }
}
