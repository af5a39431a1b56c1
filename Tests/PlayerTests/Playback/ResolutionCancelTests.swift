import Foundation
import TestSupport
import Wire
import XCTest

/// A stream whose playbackinfo cannot be fetched (the network keeps failing) is retried while the
/// app wants it, and given up as soon as it does not: after `player.reset` or a new `load`, no
/// request for it reaches the origin any more.
final class ResolutionCancelTests: XCTestCase {
    func testAResolutionNobodyWaitsForStopsAskingTheOrigin() async throws {
        let origin = try OriginProcess.start()
        defer { origin.discard() }
        let api = OriginAPI(origin: origin)
        // Every playbackinfo request is cut off without an answer: a transient network failure,
        // which streaming retries without end (0.5, 1, 2, 4, 5, 5 … s apart).
        try await api.injectFaults("/v1/playbackinfo/", [["reset": true, "repeat": 1000]])
        let h = try PlayerHarness()
        _ = try await h.start(
            extraArgs: ["--origin", origin.baseURL],
            environment: ["CASSETTE_CLIENT_TOKEN": "demo", "CASSETTE_CLIENT_SECRET": "demo"])

        func asked(_ product: String) async throws -> Int {
            (try await api.stats().object("requests")["/v1/playbackinfo/\(product)"] as? NSNumber)?.intValue ?? 0
        }
        func waitAsked(_ product: String, atLeast count: Int) async throws -> Int {
            let deadline = Date().addingTimeInterval(15)
            var seen = try await asked(product)
            while seen < count, Date() < deadline {
                try await Task.sleep(nanoseconds: 100_000_000)
                seen = try await asked(product)
            }
            return seen
        }

        // A new load abandons the first product's resolution …
        _ = try await h.call("player.load", PlayerHarness.product("tr-1"))
        let first = try await waitAsked("tr-1", atLeast: 2)
        XCTAssertGreaterThanOrEqual(first, 2, "tr-1 is being retried")
        _ = try await h.call("player.load", PlayerHarness.product("tr-2"))
        let second = try await waitAsked("tr-2", atLeast: 2)
        XCTAssertGreaterThanOrEqual(second, 2, "tr-2 is being retried")
        // … and a reset the second's.
        _ = try await h.call("player.reset")
        let atReset = (try await asked("tr-1"), try await asked("tr-2"))
        // Without cancelling, the next retries (after 2 and 4 s) would come within this wait.
        try await Task.sleep(nanoseconds: 6_500_000_000)
        let later = (try await asked("tr-1"), try await asked("tr-2"))
        XCTAssertLessThanOrEqual(later.0, atReset.0 + 1, "tr-1 was still asked for after the app moved on")
        XCTAssertLessThanOrEqual(later.1, atReset.1 + 1, "tr-2 was still asked for after the reset")
        await h.stop()
        print("abandoned resolutions: tr-1 \(atReset.0) → \(later.0), tr-2 \(atReset.1) → \(later.1) requests over 6.5 s")
    }

    /// A product replaced while it is still being resolved was never announced: the next
    /// transition comes from what clients last heard of (here nothing), not from it.
    func testAProductReplacedBeforeItResolvedIsNotNamedAsThePreviousOne() async throws {
        let origin = try OriginProcess.start()
        defer { origin.discard() }
        let api = OriginAPI(origin: origin)
        try await api.injectFaults("/v1/playbackinfo/tr-1", [["delayMs": 2_000, "repeat": 10]])
        let h = try PlayerHarness()
        let client = try await h.start(
            pace: "realtime", extraArgs: ["--origin", origin.baseURL],
            environment: ["CASSETTE_CLIENT_TOKEN": "demo", "CASSETTE_CLIENT_SECRET": "demo"])
        let log = EventLog(client)
        // tr-1's load waits on its slow playbackinfo; tr-2 replaces it meanwhile.
        let slow = Task { [client] in try await client.call("player.load", PlayerHarness.product("tr-1")) }
        try await Task.sleep(nanoseconds: 300_000_000)
        _ = try await client.call("player.load", PlayerHarness.product("tr-2"))
        _ = try? await slow.value
        let first = try await log.until { $0.type == "MediaProductTransition" }
        XCTAssertEqual(first.filter { $0.type == "MediaProductTransition" }.map(EventLog.describe), ["Transition:->tr-2"])
        // tr-1's answer arrives later and is dropped: no transition names it.
        try await Task.sleep(nanoseconds: 2_500_000_000)
        _ = try await h.call("player.reset")
        let rest = try await log.untilState("IDLE")
        let named = rest.filter { $0.type == "MediaProductTransition" }.map(EventLog.describe).filter { $0.contains("tr-1") }
        XCTAssertEqual(named, [], "tr-1 was never active")
        await h.stop()
    }
}
