import Foundation
import GRDB
import TestSupport
import Wire
import XCTest

/// A station of 1 000 files synced round after round (each round's station expires, which
/// deletes it, and the next sync downloads everything again), with `service.status` polled
/// on a connection of its own throughout: every answer must come within 1 s — on one core
/// and on all of them. `CASSETTE_STRESS_ROUNDS` sets the number of rounds (default 3).
final class StationStressTests: XCTestCase {
    static let station = "st-stress"
    static let files = 1_000
    static let fileBytes = 200 * 1024
    static let rounds = ProcessInfo.processInfo.environment["CASSETTE_STRESS_ROUNDS"].flatMap { Int($0) }.map { max(1, $0) } ?? 3
    static let day = 86_400.0

    func testThousandFileStationRoundsOnOneCore() async throws {
        try await syncRounds(.oneCore)
    }

    func testThousandFileStationRoundsOnAllCores() async throws {
        try await syncRounds(.allCores)
    }

    private func syncRounds(_ setting: CoreSetting) async throws {
        let station = Self.station
        let h = try DownloaderHarness(synthetic: ["\(station)=\(Self.files)x\(Self.fileBytes)"])
        defer { h.discard() }
        let service = try await h.startOnline(on: setting)
        let manifest = try await h.manifest(station)
        XCTAssertEqual(manifest.count, Self.files)
        let expected = Dictionary(uniqueKeysWithValues: manifest.values.map { (localName($0.url), $0.sha256) })

        let probe = try await StatusProbe.start(socketPath: service.socketPath)
        let client = try await h.client()
        defer { Task { await client.close() } }
        let events = EventCollector(client)
        _ = try await client.call("events.subscribe", ["topics": ["downloads"]])

        var durations: [String] = []
        for round in 1...Self.rounds {
            let mark = events.count
            let began = Date()
            let answer = try await client.call("stations.sync", ["stationId": .string(station)])
            XCTAssertEqual(answer["total"]?.intValue, Self.files, "round \(round): \(answer)")
            XCTAssertEqual(answer["added"]?.arrayValue?.count, Self.files, "round \(round) downloads everything again")
            XCTAssertEqual(answer["refused"]?.arrayValue?.count, 0)
            let complete = try await events.wait("StationDownloadComplete", from: mark, timeout: 150) {
                $0.type == "StationDownloadComplete" && $0.data["stationId"]?.stringValue == station
            }
            let seconds = Date().timeIntervalSince(began)
            XCTAssertEqual(complete.data["failed"]?.intValue, 0, "round \(round): \(complete.data)")
            XCTAssertEqual(complete.data["pending"]?.intValue, 0)
            try await assertComplete(h, expected: expected, round: round)
            try await assertFetchedOnce(h, manifest: manifest, round: round)

            let expiredAfter = try await expire(h, events: events, round: round)
            durations.append(String(format: "round %d: sync %.1f s, expiry %.1f s", round, seconds, expiredAfter))
            stressReport(
                "station \(Self.files)x\(Self.fileBytes / 1024)KiB", setting,
                String(
                    format: "round %d/%d: %d files verified in %.1f s, expired and deleted in %.1f s; %@",
                    round, Self.rounds, Self.files, seconds, expiredAfter, probe.current.description))
        }

        let figures = await probe.stop()
        stressReport("station \(Self.files)x\(Self.fileBytes / 1024)KiB", setting, "\(durations.joined(separator: "; ")); \(figures)")
        XCTAssertTrue(figures.failures.isEmpty, "service.status failed: \(figures.failures.prefix(5))")
        XCTAssertTrue(figures.late.isEmpty, "service.status answers over \(probe.limitSeconds) s: \(figures.late)")
        XCTAssertGreaterThan(figures.calls, Self.rounds * 10, "the probe hardly ran")
    }

    /// Every file of the station verified: `stations.list`, the catalog and the media folder
    /// (one file per item, of its size and SHA-256, no `.part` left) agree.
    private func assertComplete(_ h: DownloaderHarness, expected: [String: String], round: Int) async throws {
        let list = try await h.call("stations.list")
        let entry = list["localOffline"]?.arrayValue?.first { $0["id"]?.stringValue == Self.station }
        XCTAssertEqual(entry?["itemCount"]?.intValue, Self.files, "round \(round)")
        XCTAssertEqual(entry?["verifiedCount"]?.intValue, Self.files, "round \(round)")

        let verified = try h.catalogPool().read { db in
            try Row.fetchOne(
                db,
                sql: """
                    SELECT COUNT(*) AS n, COALESCE(SUM(f.sizeBytes), 0) AS bytes FROM stationItems si
                      JOIN mediaItems m ON m.id = si.itemId JOIN files f ON f.id = m.fileId
                    WHERE si.stationId = ? AND f.state = 'verified'
                    """, arguments: [Self.station])
        }
        XCTAssertEqual(verified?["n"] as Int?, Self.files, "round \(round): verified files in the catalog")
        XCTAssertEqual(verified?["bytes"] as Int?, Self.files * Self.fileBytes)

        let onDisk = h.mediaFiles()
        XCTAssertEqual(onDisk.count, Self.files, "round \(round): \(onDisk.filter { !$0.hasSuffix(".bin") }.prefix(5))")
        let hashes = try sha256(ofFiles: onDisk.map { h.mediaDir + "/" + $0 })
        for (relative, sha) in expected where hashes[h.mediaDir + "/" + relative] != sha {
            XCTFail("round \(round): \(relative) is missing or differs from the origin's")
            break
        }
    }

    /// Nothing is still downloading once the station is complete, and the origin sent every
    /// file once per round: no verified file was fetched again.
    private func assertFetchedOnce(
        _ h: DownloaderHarness, manifest: [String: (url: String, sha256: String, size: Int)],
        round: Int
    ) async throws {
        let running = try await h.activeDownloads()
        XCTAssertEqual(running, 0, "round \(round): transfers still running after StationDownloadComplete")
        try await waitUntil("no transfer running (round \(round))", timeout: 30) { try await h.activeDownloads() == 0 }
        let full = try await h.mediaStats().full
        let again = manifest.values.map(\.url).filter { full[$0, default: 0] != round }.sorted()
        XCTAssertEqual(again, [], "round \(round): files not sent exactly \(round) time(s): \(again.map { "\($0) ×\(full[$0, default: 0])" })")
    }

    /// Moves the origin's clock past the station's validity and waits until the downloader
    /// deleted it: gone from `localOffline`, a `StationExpired` event, no file left. Seconds it took.
    private func expire(_ h: DownloaderHarness, events: EventCollector, round: Int) async throws -> Double {
        let mark = events.count
        let began = Date()
        try await h.setServerClock(offset: Double(round) * 2 * Self.day)
        try await waitUntil("station \(Self.station) expired (round \(round))", timeout: 60) {
            let list = try await h.call("stations.list")
            return !(list["localOffline"]?.arrayValue ?? []).contains { $0["id"]?.stringValue == Self.station }
        }
        try await events.wait("StationExpired", from: mark, timeout: 10) {
            $0.type == "StationExpired" && $0.data["stationId"]?.stringValue == Self.station
        }
        try await waitUntil("the expired station's files deleted (round \(round))", timeout: 30) {
            h.mediaFiles().isEmpty
        }
        return Date().timeIntervalSince(began)
    }
}
