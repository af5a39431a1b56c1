import Foundation
import TestSupport
import Wire
import XCTest

/// Socket-level: what `playlog.record` / `consumption.record` accept, refuse and store.
final class ReporterRecordTests: XCTestCase {
    private func expectInvalid(
        _ client: RPCClient, _ method: String, _ params: JSONValue, field: String,
        file: StaticString = #filePath, line: UInt = #line
    ) async throws {
        do {
            let result = try await client.call(method, params)
            XCTFail("\(method) accepted a malformed record: \(result)", file: file, line: line)
        } catch let error as RPCError {
            XCTAssertEqual(error.code, -32602, error.message, file: file, line: line)
            XCTAssertEqual(error.name, "InvalidParams", file: file, line: line)
            XCTAssertTrue(error.message.contains(field), "message \"\(error.message)\" should name \(field)", file: file, line: line)
            XCTAssertEqual(error.details["field"]?.stringValue, field, file: file, line: line)
        }
    }

    private func play(replacing key: String, with value: JSONValue?) -> JSONValue {
        var event = Records.play().objectValue!
        event[key] = value
        if value == nil { event.removeValue(forKey: key) }
        return ["event": .object(event)]
    }

    func testMalformedRecordsAreRefusedNamingTheField() async throws {
        let reporter = try ReporterUnderTest(origin: nil)
        defer {
            reporter.kill9()
            reporter.dir.remove()
        }
        try reporter.start()
        let client = try await reporter.client()
        try await expectInvalid(client, "playlog.record", [:], field: "params.event")
        try await expectInvalid(client, "playlog.record", ["event": "not an object"], field: "params.event")
        try await expectInvalid(client, "playlog.record", play(replacing: "eventId", with: nil), field: "params.event.eventId")
        try await expectInvalid(client, "playlog.record", play(replacing: "eventId", with: "play-1"), field: "params.event.eventId")
        try await expectInvalid(client, "playlog.record", play(replacing: "eventId", with: 42), field: "params.event.eventId")
        try await expectInvalid(client, "playlog.record", play(replacing: "productId", with: nil), field: "params.event.productId")
        try await expectInvalid(client, "playlog.record", play(replacing: "productId", with: "../etc"), field: "params.event.productId")
        try await expectInvalid(client, "playlog.record", play(replacing: "productId", with: "."), field: "params.event.productId")
        try await expectInvalid(client, "playlog.record", play(replacing: "productId", with: ".."), field: "params.event.productId")
        try await expectInvalid(
            client, "consumption.record", ["productId": "..", "at": "2026-11-21T10:00:00Z", "start": 0, "end": 1],
            field: "params.productId")
        try await expectInvalid(client, "playlog.record", play(replacing: "requestedProductId", with: nil), field: "params.event.requestedProductId")
        try await expectInvalid(client, "playlog.record", play(replacing: "playbackSessionId", with: ""), field: "params.event.playbackSessionId")
        try await expectInvalid(client, "playlog.record", play(replacing: "startedAt", with: "yesterday"), field: "params.event.startedAt")
        try await expectInvalid(client, "playlog.record", play(replacing: "endedAt", with: nil), field: "params.event.endedAt")
        try await expectInvalid(client, "playlog.record", play(replacing: "startPosition", with: -1), field: "params.event.startPosition")
        try await expectInvalid(client, "playlog.record", play(replacing: "endPosition", with: "10"), field: "params.event.endPosition")
        try await expectInvalid(client, "playlog.record", play(replacing: "offline", with: "yes"), field: "params.event.offline")
        try await expectInvalid(client, "playlog.record", play(replacing: "actions", with: nil), field: "params.event.actions")
        try await expectInvalid(client, "playlog.record", play(replacing: "stationId", with: 9), field: "params.event.stationId")
        try await expectInvalid(client, "playlog.record", ["event": Records.play(padding: 21 * 1024)], field: "params.event")
        try await expectInvalid(client, "consumption.record", ["productId": "vid-1", "at": "2026-11-21T10:00:00Z", "start": 0], field: "params.end")
        try await expectInvalid(
            client, "consumption.record", ["recordId": "r-1", "productId": "vid-1", "at": "2026-11-21T10:00:00Z", "start": 0, "end": 1],
            field: "params.recordId")
        try await expectInvalid(client, "consumption.record", ["productId": "vid-1", "at": true, "start": 0, "end": 1], field: "params.at")

        // Nothing of that was stored; a record just under the limit is.
        let fits = try await client.call("playlog.record", ["event": Records.play(padding: 19 * 1024)])
        XCTAssertEqual(fits["duplicate"]?.boolValue, false)
        let status = try await client.call("playlog.status")
        XCTAssertEqual(status["pending"]?.intValue, 1)
        await client.close()
    }

    func testSameIDTwiceIsStoredOnce() async throws {
        let reporter = try ReporterUnderTest(origin: nil)
        defer {
            reporter.kill9()
            reporter.dir.remove()
        }
        try reporter.start()
        let client = try await reporter.client()
        let id = UUID().uuidString.lowercased()
        let first = try await client.call("playlog.record", ["event": Records.play(id: id)])
        XCTAssertEqual(first["eventId"]?.stringValue, id)
        XCTAssertEqual(first["duplicate"]?.boolValue, false)
        // Concurrent repeats of the same id land in one group commit: still stored once.
        try await withThrowingTaskGroup(of: JSONValue.self) { group in
            for _ in 0..<8 { group.addTask { try await client.call("playlog.record", ["event": Records.play(id: id)]) } }
            for try await answer in group { XCTAssertEqual(answer["duplicate"]?.boolValue, true) }
        }
        let status = try await client.call("playlog.status")
        XCTAssertEqual(status["pending"]?.intValue, 1)
        await client.close()
    }

    /// At the cap a record is refused with QueueFull and an event; once delivery frees space,
    /// QueueAvailable is published and recording works again. Nothing is dropped.
    func testQueueCapReachedAndRecovered() async throws {
        let origin = try PinnedOrigin()
        defer { origin.discard() }
        let cap = 4000
        let reporter = try ReporterUnderTest(
            origin: origin.baseURL,
            reporterConfig: ["maxQueueBytes": cap, "probeIntervalSeconds": 0.1])
        defer {
            reporter.kill9()
            reporter.dir.remove()
        }
        try reporter.start()
        let client = try await reporter.client()
        _ = try await client.call("events.subscribe", ["topics": ["reporter"]])
        var stored = 0
        var refused: RPCError?
        for _ in 0..<100 {
            do {
                _ = try await client.call("playlog.record", ["event": Records.play()])
                stored += 1
            } catch let error as RPCError {
                refused = error
                break
            }
        }
        XCTAssertGreaterThan(stored, 3)
        let error = try XCTUnwrap(refused, "the cap never refused a record")
        XCTAssertEqual(error.name, "QueueFull")
        XCTAssertEqual(error.code, 3001)
        XCTAssertEqual(error.details["maxQueueBytes"]?.intValue, cap)
        // Refused again while full; still only one QueueFull event.
        do {
            _ = try await client.call("playlog.record", ["event": Records.play()])
            XCTFail("recorded past the cap")
        } catch let error as RPCError {
            XCTAssertEqual(error.name, "QueueFull")
        }
        let full = try await client.call("playlog.status")
        XCTAssertEqual(full["queueFull"]?.boolValue, true)
        XCTAssertEqual(full["pending"]?.intValue, stored)
        XCTAssertLessThanOrEqual(full["pendingBytes"]?.intValue ?? .max, cap)

        try origin.start()
        var types: [String] = []
        for await event in client.events {
            types.append(event.type)
            if event.type == "QueueAvailable" { break }
        }
        // DeliveryFailed events come and go while the origin is down; QueueFull comes once.
        XCTAssertEqual(types.filter { $0 == "QueueFull" }.count, 1, "\(types)")
        let delivered = try XCTUnwrap(types.firstIndex(of: "PlaysDelivered"), "\(types)")
        XCTAssertLessThan(try XCTUnwrap(types.firstIndex(of: "QueueFull")), delivered)
        let after = try await client.call("playlog.record", ["event": Records.play()])
        XCTAssertEqual(after["duplicate"]?.boolValue, false)
        let done = try await waitForStatus(reporter, "delivery of all") { $0["pending"]?.intValue == 0 }
        XCTAssertEqual(done["queueFull"]?.boolValue, false)
        let unique = try await origin.stats()["unique"]
        XCTAssertEqual(unique, stored + 1)
        await client.close()
    }

    /// A bad `reporter` section stops the service at start, naming the key.
    func testBadConfigRefusedAtStart() throws {
        let reporter = try ReporterUnderTest(origin: nil, reporterConfig: ["maxQueueBytes": "lots", "batchSize": 900])
        defer { reporter.dir.remove() }
        let process = try ServiceProcess("reporter", in: reporter.dir, extraArgs: ["--config", reporter.configPath])
        XCTAssertEqual(try process.waitExit(), 78)
        XCTAssertTrue(process.log.contains("reporter.maxQueueBytes"), process.log)
        XCTAssertTrue(process.log.contains("reporter.batchSize"), process.log)
    }
}
