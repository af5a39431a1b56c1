import Foundation
import GRDB
import TestSupport
import Wire
import XCTest

@testable import StateDB

/// Plays heard while the catalog's disk is full are not lost: the player keeps what it cannot
/// store in memory and hands the closed plays straight to the reporter; once the reporter (or
/// the catalog) has room they reach the origin, each exactly once. Writes on a full disk answer
/// `StorageFull` (1011) in both services.
final class FullDiskPlayTests: XCTestCase {
    static let tracks = ["tr-f1", "tr-f2", "tr-f3"]
    static let credentials = ["CASSETTE_CLIENT_TOKEN": "demo", "CASSETTE_CLIENT_SECRET": "demo"]
    static let config = #"{"player": {"playProgressSeconds": 0.25, "playLogRetrySeconds": 0.2}}"#

    /// The player's disk is full, the reporter's (another disk) is not: the plays go straight
    /// to the reporter and reach the origin while the player's disk is still full.
    func testPlayerDiskFullReporterFine() async throws {
        let origin = try OriginProcess.start()
        defer { origin.discard() }
        let api = OriginAPI(origin: origin)
        let h = try PlayerHarness(stateDiskKilobytes: 4096)
        try Self.addTracks(h)
        let reporterState = h.dir.path + "/reporter-state"
        try FileManager.default.createDirectory(atPath: reporterState, withIntermediateDirectories: true)
        let reporter = try Self.startReporter(h, origin: origin, stateDir: reporterState)
        defer { reporter.kill9() }
        try await h.start(config: Self.config)
        try await h.fillStateDisk()

        try await Self.expectStorageFull { _ = try await h.call("player.config.set", ["offlineMode": true]) }
        try await Self.playAll(h)
        let stats = try await Self.waitForPlays(api, reporter: reporter, count: Self.tracks.count)
        XCTAssertEqual(stats.int("unique"), Self.tracks.count, "every play reached the origin with the player's disk still full")
        let playLog = try await h.call("service.status")["playLog"]
        XCTAssertEqual(playLog?["inMemory"]?.intValue, 0, "the reporter has them all: nothing is left in memory: \(String(describing: playLog))")
        XCTAssertEqual(Self.fullDiskLogLines(h), 1, "a full disk is logged once per episode")

        try h.stateDisk?.free()
        try await Self.expectSettles(h, api: api, reporter: reporter)
        await h.stop()
    }

    /// The player and the reporter share the full disk (as on a device): nothing can be stored
    /// anywhere, the plays wait in the player's memory, and arrive once the space is back.
    func testBothDisksFull() async throws {
        let origin = try OriginProcess.start()
        defer { origin.discard() }
        let api = OriginAPI(origin: origin)
        let h = try PlayerHarness(stateDiskKilobytes: 4096)
        try Self.addTracks(h)
        let reporter = try Self.startReporter(h, origin: origin, stateDir: nil)
        defer { reporter.kill9() }
        try await h.start(config: Self.config)
        try await h.fillStateDisk()

        try await Self.expectStorageFull { _ = try await h.call("player.config.set", ["offlineMode": true]) }
        let probe: JSONValue = [
            "event": [
                "eventId": .string(UUID().uuidString.lowercased()), "productId": "tr-f1", "requestedProductId": "tr-f1",
                "playbackSessionId": "probe", "startedAt": .string(PlayEventClock.now), "endedAt": .string(PlayEventClock.now),
                "startPosition": 0, "endPosition": 1, "offline": true, "actions": [],
            ]
        ]
        try await Self.expectStorageFull { _ = try await reporter.client().call("playlog.record", probe, timeout: .seconds(10)) }
        try await Self.playAll(h)

        var playLog: JSONValue?
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            playLog = try await h.call("service.status")["playLog"]
            if playLog?["closedInMemory"]?.intValue == Self.tracks.count { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        XCTAssertEqual(playLog?["closedInMemory"]?.intValue, Self.tracks.count, "kept in memory: \(String(describing: playLog))")
        XCTAssertEqual(playLog?["storageFull"], .bool(true))
        let before = try await api.stats().object("plays")
        XCTAssertEqual(before.int("unique") ?? 0, 0, "nothing could be stored, so nothing was sent")
        XCTAssertEqual(Self.fullDiskLogLines(h), 1, "a full disk is logged once per episode")

        try h.stateDisk?.free()
        let stats = try await Self.waitForPlays(api, reporter: reporter, count: Self.tracks.count)
        XCTAssertEqual(stats.int("unique"), Self.tracks.count)
        try await Self.expectSettles(h, api: api, reporter: reporter)
        await h.stop()
    }

    // MARK: Steps

    private static func addTracks(_ h: PlayerHarness) throws {
        for (index, id) in tracks.enumerated() {
            let file = try h.makeTrack(id, seconds: 1, frequency: 330 + 110 * index)
            try h.addProduct(id, file: file, seconds: 1)
        }
    }

    /// A reporter beside the player, on the player's state directory or on `stateDir`.
    private static func startReporter(_ h: PlayerHarness, origin: OriginProcess, stateDir: String?) throws -> ServiceProcess {
        let state = stateDir.map { ["--state-dir", $0] } ?? []
        let reporter = try ServiceProcess(
            "reporter", in: h.dir, extraArgs: state + ["--origin", origin.baseURL],
            environment: credentials)
        try reporter.waitReady()
        return reporter
    }

    /// Each track loaded and played to its end.
    private static func playAll(_ h: PlayerHarness) async throws {
        let log = EventLog(h.client!)
        for id in tracks {
            _ = try await h.call("player.load", PlayerHarness.product(id))
            _ = try await h.call("player.play")
            _ = try await log.untilState("IDLE", timeout: 30)
        }
    }

    private static func expectStorageFull(_ body: () async throws -> Void) async throws {
        do {
            try await body()
            XCTFail("a write on a full disk must fail")
        } catch let error as RPCError {
            XCTAssertEqual(error.name, "StorageFull", "\(error)")
            XCTAssertEqual(error.code, 1011)
        }
    }

    /// Waits (flushing the reporter) until the origin counts `count` distinct plays.
    private static func waitForPlays(_ api: OriginAPI, reporter: ServiceProcess, count: Int) async throws -> [String: Any] {
        var plays: [String: Any] = [:]
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            plays = try await api.stats().object("plays")
            if (plays.int("unique") ?? 0) >= count { break }
            _ = try? await reporter.client().call("playlog.flush", timeout: .seconds(5))
            try await Task.sleep(for: .milliseconds(300))
        }
        return plays
    }

    /// After the space is back: the player holds nothing (memory or catalog), the reporter has
    /// nothing pending, and the origin counted each play once.
    private static func expectSettles(_ h: PlayerHarness, api: OriginAPI, reporter: ServiceProcess) async throws {
        var inMemory = -1
        var rows = -1
        var pending = -1
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            inMemory = try await h.call("service.status")["playLog"]?["inMemory"]?.intValue ?? -1
            rows = try await h.catalog.pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM playerPlays") ?? 0 }
            pending = try await reporter.client().call("playlog.flush", timeout: .seconds(10))["pending"]?.intValue ?? -1
            if inMemory == 0, rows == 0, pending == 0 { break }
            try await Task.sleep(for: .milliseconds(300))
        }
        XCTAssertEqual(inMemory, 0, "nothing left in the player's memory")
        XCTAssertEqual(rows, 0, "nothing left in playerPlays")
        XCTAssertEqual(pending, 0, "nothing left in the reporter's outbox")
        let plays = try await api.stats().object("plays")
        XCTAssertEqual(plays.int("unique"), tracks.count, "every play heard reached the origin")
        XCTAssertEqual(plays.int("duplicates"), 0, "and each exactly once")
        let lines = try String(contentsOf: api.origin.dataDirectory.appendingPathComponent("plays.jsonl"), encoding: .utf8)
            .split(separator: "\n")
        let products = lines.compactMap { line -> String? in
            let item = (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["item"] as? [String: Any]
            return item?["productId"] as? String
        }
        XCTAssertEqual(products, tracks, "in the order they were heard")
    }

    private static func fullDiskLogLines(_ h: PlayerHarness) -> Int {
        (h.player?.log ?? "").components(separatedBy: "\n").filter { $0.contains("the catalog's disk is full") }.count
    }
}

enum PlayEventClock {
    static var now: String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date())
    }
}

extension PlayerHarness {
    /// Empties the WAL into the catalog (so that any later write must grow a file), then fills
    /// the state disk: from here every catalog write fails with SQLITE_FULL.
    func fillStateDisk() async throws {
        _ = try await call("service.status")
        try await catalog.pool.writeWithoutTransaction { db in
            _ = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        }
        try stateDisk?.fill()
    }
}
