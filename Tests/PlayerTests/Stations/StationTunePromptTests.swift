import Foundation
import Glibc
import TestSupport
import Wire
import XCTest

/// docs/protocol.md: every call answers promptly. `station.tune` of a station not on the device asks
/// the origin; unreachable, it answers within 10 s with `OriginUnreachable` (1010).
final class StationTunePromptTests: XCTestCase {
    func testTuneAnswersWithinTenSecondsWhenThePortIsClosed() async throws {
        let port = try RefusingPort()
        try await assertPromptTune(origin: port.url)
    }

    func testTuneAnswersWithinTenSecondsWhenTheOriginNeverAnswers() async throws {
        let port = try SilentPort()
        try await assertPromptTune(origin: port.url)
    }

    func testTuneAnswersWithinTenSecondsWhenTheOriginAnswersOnly5xx() async throws {
        let origin = try OriginProcess.start()
        defer { origin.discard() }
        try await OriginAPI(origin: origin).injectFaults("/v1/", [["status": 503, "repeat": 100_000]])
        try await assertPromptTune(origin: origin.baseURL)
    }

    /// Once the player's own look at the origin found no answer (availability NOT_AVAILABLE),
    /// a tune tries once: that one try still ends by the interactive deadline, not after the
    /// request's whole timeout.
    func testTuneAnswersWithinTenSecondsOnceTheOriginIsKnownUnreachable() async throws {
        let port = try SilentPort()
        let h = try PlayerHarness()
        try await h.start(extraArgs: ["--origin", port.url])
        defer { h.player?.kill9() }
        guard let player = h.player else { return XCTFail("no player") }
        try await waitUntil("availability NOT_AVAILABLE\n\(player.log)", timeout: 30) {
            try await h.status()["availability"]?.stringValue == "NOT_AVAILABLE"
        }
        let client = try await player.client()
        let started = ContinuousClock.now
        let outcome = await client.callWithin(20, "station.tune", ["stationId": "st-9"])
        let elapsed = started.duration(to: .now)
        await client.close()
        guard case .error(let error) = outcome else { return XCTFail("station.tune: \(outcome)") }
        XCTAssertEqual(error.name, RPCErrorKind.originUnreachable.name, "\(error)")
        XCTAssertLessThan(elapsed, .seconds(10), "station.tune answered after \(elapsed)")
        print("station.tune against a silent origin known unreachable: \(error.name) after \(elapsed)")
    }

    func testSigtermWhileTuneWaitsOnTheOriginEndsWithinTenSeconds() async throws {
        let port = try SilentPort()
        let h = try PlayerHarness()
        try await h.start(extraArgs: ["--origin", port.url])
        guard let player = h.player else { return XCTFail("no player") }
        let stop = try await player.sigtermDuring("station.tune", ["stationId": "st-9"])
        XCTAssertEqual(stop.exitStatus, 0, player.log)
        h.player = nil
        if case .noAnswer(let why) = stop.call { XCTFail("station.tune: \(why)") }
    }

    private func assertPromptTune(origin: String) async throws {
        let h = try PlayerHarness()
        try await h.start(extraArgs: ["--origin", origin])
        defer { h.player?.kill9() }
        guard let player = h.player else { return XCTFail("no player") }
        let client = try await player.client()
        let started = ContinuousClock.now
        let outcome = await client.callWithin(10, "station.tune", ["stationId": "st-9"])
        let elapsed = started.duration(to: .now)
        await client.close()
        guard case .error(let error) = outcome else { return XCTFail("station.tune: \(outcome)") }
        XCTAssertEqual(error.name, RPCErrorKind.originUnreachable.name, "\(error)")
        XCTAssertEqual(error.code, 1010)
        XCTAssertLessThan(elapsed, .seconds(10), "station.tune answered after \(elapsed)")
    }
}
