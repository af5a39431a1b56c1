import Foundation
import GRDB
import TestSupport
import Wire
import XCTest

/// Socket-level: the real reporter binary against the real reference origin, which counts
/// unique eventIds (`/_control/stats`).
final class ReporterDeliveryTests: XCTestCase {
    /// 10 000 plays made while the origin is down reach it exactly once each when it comes up,
    /// and none is sent more often than needed (no failure happened once it was up).
    func testTenThousandPlaysOriginDownThenUp() async throws {
        let origin = try PinnedOrigin()
        defer { origin.discard() }
        let reporter = try ReporterUnderTest(origin: origin.baseURL, reporterConfig: ["probeIntervalSeconds": 0.2])
        defer {
            reporter.kill9()
            reporter.dir.remove()
        }
        try reporter.start()

        let ids = try await Records.recordPlays(10_000, into: reporter)
        XCTAssertEqual(Set(ids).count, 10_000)
        let held = try await waitForStatus(reporter, "10 000 pending with the origin down") { $0["pending"]?.intValue == 10_000 }
        XCTAssertEqual(held["delivered"]?.intValue, 0)
        XCTAssertEqual(held["lastAttempt"]?["result"]?.stringValue, "failed")
        XCTAssertEqual(held["lastAttempt"]?["error"]?["name"]?.stringValue, "OriginUnreachable")

        try origin.start()
        let up = Date()
        let done = try await waitForStatus(reporter, timeout: 90, "everything delivered") { $0["pending"]?.intValue == 0 }
        print("reporter: 10 000 plays delivered \(String(format: "%.2f", Date().timeIntervalSince(up))) s after the origin came up")
        XCTAssertEqual(done["delivered"]?.intValue, 10_000)
        XCTAssertEqual(done["rejected"]?.intValue, 0)
        let stats = try await origin.stats()
        XCTAssertEqual(stats["unique"], 10_000)
        XCTAssertEqual(stats["received"], 10_000, "each play sent once: none was resent")
        XCTAssertEqual(stats["requests"], 20, "10 000 plays in batches of 500")
    }

    /// The reporter is killed with SIGKILL at 50 random moments while it delivers 10 000 plays:
    /// the origin still ends with exactly 10 000 unique plays, and nothing stays pending.
    func testKilledFiftyTimesDuringDelivery() async throws {
        let origin = try PinnedOrigin()
        defer { origin.discard() }
        // Small batches and a slow origin spread the delivery over the 50 kills.
        let batch = 25
        let reporter = try ReporterUnderTest(
            origin: origin.baseURL,
            reporterConfig: [
                "batchSize": batch, "retryInitialSeconds": 0.05,
                "retryMaxSeconds": 0.5, "probeIntervalSeconds": 0.1,
            ])
        defer {
            reporter.kill9()
            reporter.dir.remove()
        }
        try reporter.start()
        _ = try await Records.recordPlays(10_000, into: reporter)
        reporter.kill9()

        try origin.start()
        try await origin.injectFaults("/v1/plays", [["delayMs": 15, "repeat": 1_000_000]])
        var generator = SystemRandomNumberGenerator()
        var pendingAtKill: [Int] = []
        for _ in 0..<50 {
            try reporter.start()
            try await Task.sleep(nanoseconds: UInt64.random(in: 0...150_000_000, using: &generator))
            reporter.kill9()
            pendingAtKill.append(try Self.pendingRows(reporter.catalogPath))
        }
        let during = pendingAtKill.filter { $0 > 0 && $0 < 10_000 }.count
        print("reporter kill loop: 50 kills, pending after each: \(pendingAtKill)")
        XCTAssertEqual(pendingAtKill.filter { $0 > 0 }.count, 50, "every kill came while plays were still pending")
        XCTAssertGreaterThan(during, 40, "most kills came after delivery had started")

        try await origin.clearFaults()
        try reporter.start()
        let done = try await waitForStatus(reporter, timeout: 120, "delivery after the kills") { $0["pending"]?.intValue == 0 }
        XCTAssertEqual(done["delivered"]?.intValue, 10_000)
        XCTAssertEqual(try Self.pendingRows(reporter.catalogPath), 0)
        let stats = try await origin.stats()
        print("reporter kill loop: origin stats \(stats)")
        XCTAssertEqual(stats["unique"], 10_000)
        // A kill can only make the batch in flight go again: at most one batch per kill.
        XCTAssertLessThanOrEqual(stats["received"] ?? .max, 10_000 + 50 * batch)
        XCTAssertEqual(stats["rejected"], 0)
    }

    /// Killed while a request is out and the answer before it was just taken: after the restart
    /// only the request that was out goes again, nothing is lost, and the origin counts each
    /// play once. (Delivery overlaps marking one answer with sending the next request.)
    func testKilledWhileTheNextRequestIsOutResendsOnlyThatRequest() async throws {
        let origin = try PinnedOrigin()
        defer { origin.discard() }
        let batch = 100
        let reporter = try ReporterUnderTest(
            origin: origin.baseURL,
            reporterConfig: [
                "batchSize": batch, "retryInitialSeconds": 0.05,
                "retryMaxSeconds": 0.2, "probeIntervalSeconds": 0.1,
            ])
        defer {
            reporter.kill9()
            reporter.dir.remove()
        }
        try reporter.start()
        let ids = try await Records.recordPlays(3 * batch, into: reporter, connections: 2, perConnection: 4)
        XCTAssertEqual(Set(ids).count, 3 * batch)

        // The first request goes through; the second is held at the origin for 30 s. Queued as
        // the origin starts: the reporter, probing every 0.1 s, delivers the moment it listens.
        try origin.start(faults: ["path": "/v1/plays", "faults": [["delayMs": 0], ["delayMs": 30_000]]])
        _ = try await waitForStatus(reporter, "the first request's answer marked") { $0["delivered"]?.intValue == batch }
        try await Task.sleep(nanoseconds: 200_000_000)
        let held = try await waitForStatus(reporter, "the second request out") { $0["delivery"]?["state"]?.stringValue == "delivering" }
        XCTAssertEqual(held["pending"]?.intValue, 2 * batch)
        reporter.kill9()
        XCTAssertEqual(try Self.pendingRows(reporter.catalogPath), 2 * batch, "only what was not answered is pending")

        try await origin.clearFaults()
        try reporter.start()
        let done = try await waitForStatus(reporter, "delivery after the restart") { $0["pending"]?.intValue == 0 }
        XCTAssertEqual(done["delivered"]?.intValue, 3 * batch)
        let stats = try await origin.stats()
        XCTAssertEqual(stats["unique"], 3 * batch)
        XCTAssertEqual(stats["rejected"], 0)
        // The held request may still be processed by the origin after its delay: then it counts
        // as received twice. The first request's plays never go again.
        XCTAssertLessThanOrEqual(stats["received"] ?? .max, 3 * batch + batch)
        XCTAssertLessThanOrEqual(stats["duplicates"] ?? .max, batch)
    }

    /// The origin records a batch and drops the connection before answering: the reporter
    /// cannot know, sends it again, and the origin counts each play once.
    func testCommitThenResetIsResentAndCountedOnce() async throws {
        let origin = try PinnedOrigin()
        defer { origin.discard() }
        try origin.start()
        let reporter = try ReporterUnderTest(origin: origin.baseURL, reporterConfig: ["retryInitialSeconds": 0.2])
        defer {
            reporter.kill9()
            reporter.dir.remove()
        }
        try reporter.start()
        try await origin.injectFaults("/v1/plays", [["commitThenReset": true]])
        let client = try await reporter.client()
        let ids = try await Records.recordPlays(1, into: reporter, connections: 1, perConnection: 1)
        let done = try await waitForStatus(reporter, "the resend") { $0["pending"]?.intValue == 0 }
        XCTAssertEqual(done["delivered"]?.intValue, 1)
        let stats = try await origin.stats()
        XCTAssertEqual(stats["unique"], 1)
        XCTAssertEqual(stats["received"], 2, "sent, committed and reset; then sent again")
        XCTAssertEqual(stats["duplicates"], 1)
        XCTAssertEqual(ids.count, 1)
        await client.close()
    }

    /// What the origin rejects is set aside with its reason, shown in status and published,
    /// and never sent again; what it names neither way goes again.
    func testRejectedRecordsAreSetAsideAndNeverResent() async throws {
        let origin = try PinnedOrigin()
        defer { origin.discard() }
        let reporter = try ReporterUnderTest(
            origin: origin.baseURL,
            reporterConfig: ["retryInitialSeconds": 60, "probeIntervalSeconds": 60])
        defer {
            reporter.kill9()
            reporter.dir.remove()
        }
        try reporter.start()
        let client = try await reporter.client()
        _ = try await client.call("events.subscribe", ["topics": ["reporter"]])
        let ids = (0..<3).map { _ in UUID().uuidString.lowercased() }
        for id in ids { _ = try await client.call("playlog.record", ["event": Records.play(id: id)]) }
        _ = try await waitForStatus(reporter, "the first failed attempt") { $0["delivery"]?["state"]?.stringValue == "waitingToRetry" }

        try origin.start()
        // One forged answer: the first accepted, the second rejected, the third not named.
        try await origin.injectFaults(
            "/v1/plays",
            [
                [
                    "body": [
                        "accepted": [ids[0]],
                        "rejected": [["eventId": ids[1], "index": 1, "reason": "unknown product"]],
                    ]
                ]
            ])
        _ = try await client.call("playlog.flush", timeout: .seconds(30))
        let done = try await waitForStatus(reporter, "the third delivered") { $0["pending"]?.intValue == 0 }
        XCTAssertEqual(done["delivered"]?.intValue, 2)
        XCTAssertEqual(done["rejected"]?.intValue, 1)
        XCTAssertEqual(done["recentRejections"]?.arrayValue?.first?["id"]?.stringValue, ids[1])
        XCTAssertEqual(done["recentRejections"]?.arrayValue?.first?["reason"]?.stringValue, "unknown product")
        _ = try await client.call("playlog.flush")
        let stats = try await origin.stats()
        XCTAssertEqual(stats["received"], 1, "only the unnamed play went again; the rejected one never did")
        XCTAssertEqual(stats["unique"], 1)
        var rejectedEvent: RPCEvent?
        for await event in client.events where event.type == "PlaysRejected" {
            rejectedEvent = event
            break
        }
        XCTAssertEqual(rejectedEvent?.data["eventIds"], [.string(ids[1])])
        XCTAssertEqual(rejectedEvent?.data["reasons"], ["unknown product"])
        // Recording a rejected id again is a duplicate, not a second chance.
        let again = try await client.call("playlog.record", ["event": Records.play(id: ids[1])])
        XCTAssertEqual(again["duplicate"]?.boolValue, true)
        await client.close()
    }

    /// 5xx answers are retried with backoff, and flush cuts the wait short.
    func testServerErrorsBackOffAndFlushRetriesAtOnce() async throws {
        let origin = try PinnedOrigin()
        defer { origin.discard() }
        try origin.start()
        let reporter = try ReporterUnderTest(origin: origin.baseURL, reporterConfig: ["retryInitialSeconds": 30])
        defer {
            reporter.kill9()
            reporter.dir.remove()
        }
        try reporter.start()
        try await origin.injectFaults("/v1/plays", [["status": 503, "retryAfter": 1]])
        let client = try await reporter.client()
        _ = try await client.call("events.subscribe", ["topics": ["reporter"]])
        _ = try await client.call("playlog.record", ["event": Records.play()])
        let failed = try await waitForStatus(reporter, "the failed attempt") { $0["delivery"]?["state"]?.stringValue == "waitingToRetry" }
        XCTAssertEqual(failed["pending"]?.intValue, 1)
        XCTAssertEqual(failed["lastAttempt"]?["error"]?["status"]?.intValue, 503)
        XCTAssertGreaterThan(failed["delivery"]?["nextAttemptInSeconds"]?.doubleValue ?? 0, 10, "a 30 s backoff is waiting")
        let flushed = try await client.call("playlog.flush", timeout: .seconds(30))
        XCTAssertEqual(flushed["pending"]?.intValue, 0)
        XCTAssertEqual(flushed["lastAttempt"]?["result"]?.stringValue, "delivered")
        var types: [String] = []
        for await event in client.events {
            types.append(event.type)
            if event.type == "PlaysDelivered" {
                XCTAssertEqual(event.data["count"]?.intValue, 1)
                XCTAssertEqual(event.data["pending"]?.intValue, 0)
                break
            }
        }
        XCTAssertEqual(types, ["DeliveryFailed", "PlaysDelivered"])
        let unique = try await origin.stats()["unique"]
        XCTAssertEqual(unique, 1)
        await client.close()
    }

    /// Records answered are durable: a kill -9 right after the answers loses none of them.
    func testAnsweredRecordsSurviveKill() async throws {
        let reporter = try ReporterUnderTest(origin: nil)
        defer {
            reporter.kill9()
            reporter.dir.remove()
        }
        try reporter.start()
        let ids = try await Records.recordPlays(300, into: reporter, connections: 4, perConnection: 4)
        let client = try await reporter.client()
        _ = try await client.call("consumption.record", Records.consumption())
        reporter.kill9()
        try reporter.start()
        let status = try await waitForStatus(reporter, "the reloaded outbox") { $0["pending"]?.intValue == ids.count + 1 }
        XCTAssertEqual(status["plays"]?["pending"]?.intValue, 300)
        XCTAssertEqual(status["consumption"]?["pending"]?.intValue, 1)
        XCTAssertEqual(status["delivery"]?["state"]?.stringValue, "noOrigin")
        let again = try await reporter.client()
        do {
            _ = try await again.call("playlog.flush")
            XCTFail("flush without an origin must fail")
        } catch let error as RPCError {
            XCTAssertEqual(error.name, "OriginNotConfigured")
            XCTAssertEqual(error.code, 3003)
        }
        await again.close()
    }

    /// Plays and consumption go to their own endpoints, each counted once.
    func testConsumptionDelivered() async throws {
        let origin = try PinnedOrigin()
        defer { origin.discard() }
        try origin.start()
        let reporter = try ReporterUnderTest(origin: origin.baseURL)
        defer {
            reporter.kill9()
            reporter.dir.remove()
        }
        try reporter.start()
        let client = try await reporter.client()
        let id = UUID().uuidString.lowercased()
        _ = try await client.call("consumption.record", Records.consumption(id: id))
        let again = try await client.call("consumption.record", Records.consumption(id: id))
        XCTAssertEqual(again["duplicate"]?.boolValue, true)
        let generated = try await client.call("consumption.record", ["productId": "vid-1", "at": "2026-11-21T10:00:00Z", "start": 0, "end": 3])
        XCTAssertEqual(generated["recordId"]?.stringValue?.count, 36, "a recordId is made when none is given")
        _ = try await client.call("playlog.record", ["event": Records.play()])
        _ = try await waitForStatus(reporter, "delivery") { $0["pending"]?.intValue == 0 }
        let consumption = try await origin.stats("consumption")
        XCTAssertEqual(consumption["unique"], 2)
        let unique = try await origin.stats()["unique"]
        XCTAssertEqual(unique, 1)
        await client.close()
    }

    static func pendingRows(_ path: String) throws -> Int {
        // No reporter runs at this moment: an ordinary connection is the simplest reader.
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM playlogOutbox WHERE state = 'pending'") ?? -1 }
    }
}
