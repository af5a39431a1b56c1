import Foundation
import TestSupport
import Wire
import XCTest

/// The time-to-silence warning through the socket (docs/protocol.md, "Field operations"): a
/// station that expires within `forecastWarnHours` (72 by default) brings one `SilenceForecast`
/// event and one journal line at warning level; one that lasts longer clears it
/// (`SilenceForecastCleared`, no warning), and when the trusted time (the origin's clock,
/// moved with `/_control/clock`) brings its expiry inside the window, it warns again.
final class SilenceForecastTests: XCTestCase {
    let day = 86_400.0

    func testWarnsOncePerCrossingOfTheWindow() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        let service = try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        let client = try await h.client()
        defer { Task { await client.close() } }
        let events = EventCollector(client)
        _ = try await client.call("events.subscribe", ["topics": ["downloads"]])
        func warnings() -> [String] { service.warningOrWorseLines.filter { $0.contains("offline content runs out") } }
        func silentAt(_ event: RPCEvent) throws -> Date {
            try XCTUnwrap(event.data["silentAt"]?.stringValue.flatMap(UTCTimestamp.parseRFC3339), "\(event.data)")
        }

        // st-11 lasts a day: inside the window.
        _ = try await h.call("stations.sync", ["stationId": "st-11"])
        try await h.waitStationComplete("st-11")
        let first = try await events.wait("SilenceForecast", timeout: 30) { $0.type == "SilenceForecast" }
        XCTAssertEqual(first.data["warnHours"]?.doubleValue, 72)
        XCTAssertGreaterThan(first.data["playableSeconds"]?.doubleValue ?? 0, 0)
        let firstSilentAt = try silentAt(first)
        XCTAssertLessThan(firstSilentAt.timeIntervalSinceNow, 1.01 * day)
        try await waitUntil("the journal line of the first warning\n\(service.log.suffix(3000))", timeout: 10) { warnings().count == 1 }

        // st-9 lasts a week: silentAt moves beyond the window, which clears the warning
        // without another one.
        _ = try await h.call("stations.sync", ["stationId": "st-9"])
        try await h.waitStationComplete("st-9")
        let cleared = try await events.wait("SilenceForecastCleared", timeout: 30) { $0.type == "SilenceForecastCleared" }
        let weekOut = try silentAt(cleared)
        XCTAssertGreaterThan(weekOut.timeIntervalSinceNow, 6.9 * day)
        XCTAssertEqual(events.of("SilenceForecast").count, 1, "a far expiry does not warn: \(events.of("SilenceForecast").map(\.data))")
        XCTAssertEqual(warnings().count, 1, service.log)

        // Five days on by the origin's clock: st-11 is gone, st-9 has two days left. The
        // downloader sees the origin's time in the answer to stations.list.
        try await h.setServerClock(offset: 5 * day)
        _ = try await h.call("stations.list")
        let second = try await events.wait("a second SilenceForecast", timeout: 30) {
            $0.type == "SilenceForecast" && $0.data["silentAt"] != first.data["silentAt"]
        }
        XCTAssertEqual(try silentAt(second), weekOut)
        try await waitUntil("the journal line of the second warning\n\(service.log.suffix(3000))", timeout: 10) { warnings().count == 2 }
        XCTAssertEqual(events.of("SilenceForecast").count, 2)

        let forecast = try await h.call("offline.forecast")
        XCTAssertEqual(forecast["silentAt"], second.data["silentAt"])
        print(
            "silence forecast: warned at \(first.data["silentAt"] ?? .null), cleared at \(cleared.data["silentAt"] ?? .null), warned again at \(second.data["silentAt"] ?? .null)"
        )
    }
}
