import Foundation
import TestSupport
import Wire
import XCTest

/// Eight writers record plays on connections of their own while the reporter delivers them
/// to the origin, with `service.status` polled throughout: every writer finishes, every
/// record is acknowledged, the origin counts each play once, and no status answer takes
/// over 1 s — on one core and on all of them.
final class PlaylogStressTests: XCTestCase {
    static let writers = 8
    static let perWriter = 1_000

    func testEightWritersWhileDeliveringOnOneCore() async throws {
        try await recordWhileDelivering(.oneCore)
    }

    func testEightWritersWhileDeliveringOnAllCores() async throws {
        try await recordWhileDelivering(.allCores)
    }

    private func recordWhileDelivering(_ setting: CoreSetting) async throws {
        let total = Self.writers * Self.perWriter
        let origin = try PinnedOrigin()
        defer { origin.discard() }
        try origin.start()
        // Small batches: many deliveries overlap the writes.
        let reporter = try ReporterUnderTest(origin: origin.baseURL, reporterConfig: ["batchSize": 50], cores: setting.cores)
        defer {
            reporter.kill9()
            reporter.dir.remove()
        }
        let service = try reporter.start()
        XCTAssertTrue(setting.confines(service.pid), "not pinned to CPU \(setting.cores ?? "")")
        let probe = try await StatusProbe.start(socketPath: service.socketPath)
        let listener = try await reporter.client()
        defer { Task { await listener.close() } }
        let events = EventCollector(listener)
        _ = try await listener.call("events.subscribe", ["topics": ["reporter"]])

        var clients: [RPCClient] = []
        for _ in 0..<Self.writers { clients.append(try await reporter.client()) }
        let began = Date()
        let slowest = try await withThrowingTaskGroup(of: Double.self) { group in
            for (writer, client) in clients.enumerated() {
                group.addTask { try await Self.write(Self.perWriter, as: writer, on: client) }
            }
            return try await group.reduce(0) { max($0, $1) }
        }
        for client in clients { await client.close() }
        let written = Date().timeIntervalSince(began)
        let deliveredWhileWriting = events.of("PlaysDelivered").reduce(0) { $0 + ($1.data["count"]?.intValue ?? 0) }

        let done = try await waitForStatus(reporter, timeout: 60, "every play delivered") { $0["pending"]?.intValue == 0 }
        let drained = Date().timeIntervalSince(began)
        let figures = await probe.stop()
        let stats = try await origin.stats()

        XCTAssertEqual(done["delivered"]?.intValue, total)
        XCTAssertEqual(done["rejected"]?.intValue, 0)
        XCTAssertEqual(stats["unique"], total, "origin: \(stats)")
        XCTAssertEqual(stats["received"], total, "each play reached the origin once: \(stats)")
        XCTAssertEqual(stats["duplicates"], 0)
        XCTAssertEqual(stats["rejected"], 0)
        XCTAssertGreaterThan(deliveredWhileWriting, 0, "nothing was delivered while the writers wrote")
        XCTAssertEqual(events.of("DeliveryFailed").count, 0, "\(events.of("DeliveryFailed").prefix(3))")
        XCTAssertTrue(figures.failures.isEmpty, "service.status failed: \(figures.failures.prefix(5))")
        XCTAssertTrue(figures.late.isEmpty, "service.status answers over \(probe.limitSeconds) s: \(figures.late)")
        XCTAssertGreaterThan(figures.calls, 5, "the probe hardly ran")

        stressReport(
            "playlog \(Self.writers) writers x \(Self.perWriter)", setting,
            String(
                format: "%d plays recorded in %.2f s (slowest record %.3f s), %d delivered while writing, all delivered after %.2f s in %d requests; %@",
                total, written, slowest, deliveredWhileWriting, drained, stats["requests"] ?? -1, figures.description))
    }

    /// One writer: `count` plays on its connection, one after another, each answered
    /// as stored for the first time. The slowest answer, in seconds.
    private static func write(_ count: Int, as writer: Int, on client: RPCClient) async throws -> Double {
        var slowest = 0.0
        for n in 0..<count {
            let id = UUID().uuidString.lowercased()
            let began = Date()
            let answer = try await client.call("playlog.record", ["event": Records.play(id: id)], timeout: .seconds(30))
            slowest = max(slowest, Date().timeIntervalSince(began))
            guard answer["eventId"]?.stringValue == id, answer["duplicate"]?.boolValue == false, answer["pending"]?.intValue != nil else {
                throw OriginTestError("writer \(writer), record \(n): unexpected answer \(answer)")
            }
        }
        return slowest
    }
}
