import Foundation
import GRDB
import StateDB
import TestSupport
import Wire
import XCTest

/// `cassettectl health` and `service.status`'s `health` through the real binaries: the gate an
/// OTA update's mark-good step calls (docs/operations.md, "Health gate").
final class HealthGateTests: XCTestCase {
    func testTheGatePassesOnAHealthySetAndNamesAMissingAudioDevice() async throws {
        let stack = try FleetStack()
        defer { stack.discard() }
        try stack.startAll()
        let healthy = try stack.ctl(["health", "--wait", "30"])
        XCTAssertEqual(healthy.status, 0, healthy.all + stack.logs)
        XCTAssertTrue(healthy.stdout.hasPrefix("ok: downloader, player, reporter"), healthy.all)

        // The verdict is the background round's, with its age.
        let status = try XCTUnwrap(try stack.ctl(["call", "player", "service.status"]).json)
        XCTAssertEqual(status["health"]?["ok"], true)
        XCTAssertEqual(status["health"]?["problems"], [])
        XCTAssertNotNil(status["health"]?["checkedAt"]?.stringValue)
        XCTAssertNotNil(status["health"]?["ageSeconds"]?.doubleValue)

        try stack.stop("player")
        try stack.start("player", audioDevice: "nosuchdevice")
        let failing = try stack.ctl(["health"])
        XCTAssertEqual(failing.status, 3, failing.all + stack.logs)
        let lines = failing.stdout.split(separator: "\n")
        XCTAssertEqual(lines.count, 1, failing.all)
        XCTAssertTrue(lines.first?.hasPrefix("player: audio output nosuchdevice cannot be opened: no PCM named nosuchdevice") ?? false, failing.all)

        let json = try XCTUnwrap(try stack.ctl(["health", "--json"]).json)
        XCTAssertEqual(json["ok"], false)
        XCTAssertEqual(json["services"]?["player"]?["ok"], false)
        XCTAssertEqual(json["services"]?["downloader"]?["ok"], true)
        // Only the services asked are checked.
        XCTAssertEqual(try stack.ctl(["health", "downloader", "reporter"]).status, 0)
        // The player still runs and says why it cannot play: the watchdog keeps pinging.
        XCTAssertTrue(stack.running["player"]?.isRunning ?? false)
    }

    func testAnUnreadableCatalogFailsTheGateWithOneLinePerService() async throws {
        let stack = try FleetStack(origin: false)
        defer { stack.discard() }
        try FileManager.default.createDirectory(atPath: stack.dir.stateDir, withIntermediateDirectories: true)
        try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: stack.dir.stateDir + "/catalog.sqlite"))
        try stack.startAll()
        let run = try stack.ctl(["health"])
        XCTAssertEqual(run.status, 3, run.all)
        let lines = run.stdout.split(separator: "\n")
        for service in ["player", "reporter"] {
            XCTAssertTrue(lines.contains { $0.hasPrefix("\(service): catalog unavailable: CatalogOpenFailed") }, "\(service): \(run.all)")
        }
        // The downloader cannot run without its catalog: it exits (74, and its unit restarts
        // it), so it is either seen failing or not answering, but never fit.
        XCTAssertTrue(
            lines.contains { $0.hasPrefix("downloader: catalog unavailable: CatalogOpenFailed") || $0.hasPrefix("downloader: not answering") },
            run.all)
        let status = try XCTUnwrap(try stack.ctl(["status"]))
        XCTAssertTrue(status.stdout.contains("unhealthy"), status.all)
    }

    func testAServiceThatIsDownIsAProblem() async throws {
        let stack = try FleetStack(origin: false)
        defer { stack.discard() }
        try stack.start("downloader")
        let run = try stack.ctl(["health", "downloader", "reporter"])
        XCTAssertEqual(run.status, 3, run.all)
        XCTAssertTrue(run.stdout.contains("reporter: not answering"), run.all)
        XCTAssertFalse(run.stdout.contains("downloader:"), run.all)
    }

    /// An A/B rollback: the catalog was migrated by a newer release whose migration this
    /// binary does not know. An additive one is carried along and everything works; one the
    /// newer release marked required keeps the catalog closed, and the gate says why.
    func testARollbackStartsOnACatalogWithANewerAdditiveMigration() async throws {
        let stack = try FleetStack()
        defer { stack.discard() }
        try await Self.migrateAsANewerRelease(stack.dir.stateDir, identifier: "v99-newer-release", required: false)
        try stack.startAll()
        let health = try stack.ctl(["health", "--wait", "30"])
        XCTAssertEqual(health.status, 0, health.all + stack.logs)
        for service in ["downloader", "player", "reporter"] {
            let status = try XCTUnwrap(try stack.ctl(["call", service, "service.status"]).json)
            XCTAssertEqual(status["catalog"]?["state"], "ready", service)
            XCTAssertEqual(status["catalog"]?["unknownMigrations"], ["v99-newer-release"], service)
        }
        // Work that writes to the catalog: a station synced, a play recorded and delivered.
        let sync = try stack.ctl(["sync", "st-9"])
        XCTAssertEqual(sync.status, 0, sync.all + stack.logs)
        let client = try await stack.running["reporter"]!.client()
        _ = try await client.call("playlog.record", ["event": Self.play()])
        try await waitUntil("the play delivered\n\(stack.logs)") {
            try await client.call("playlog.status")["pending"]?.intValue == 0
        }
        await client.close()
        // The newer release's table and column are still there for it.
        let catalog = try StateDB(stateDirectory: stack.dir.stateDir)
        let rows = try await catalog.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM newerFeature") }
        XCTAssertEqual(rows, 1)
        XCTAssertEqual(catalog.unknownMigrations, ["v99-newer-release"])
    }

    func testARequiredNewerMigrationKeepsTheCatalogClosedAndFailsTheGate() async throws {
        let stack = try FleetStack(origin: false)
        defer { stack.discard() }
        try await Self.migrateAsANewerRelease(stack.dir.stateDir, identifier: "v99-breaking", required: true)
        try stack.start("reporter")
        let run = try stack.ctl(["health", "reporter"])
        XCTAssertEqual(run.status, 3, run.all)
        XCTAssertTrue(run.stdout.hasPrefix("reporter: catalog unavailable: CatalogSchemaTooNew"), run.all)
        XCTAssertTrue(run.stdout.contains("v99-breaking"), run.all)
    }

    /// What a newer release's additive migration leaves: its identifier applied, a new table
    /// with a row, a new nullable column; `required` also lists it in `requiredMigrations`.
    static func migrateAsANewerRelease(_ stateDir: String, identifier: String, required: Bool) async throws {
        let catalog = try StateDB(stateDirectory: stateDir)
        try await catalog.write { db in
            try db.execute(sql: "CREATE TABLE newerFeature(id INTEGER PRIMARY KEY, note TEXT)")
            try db.execute(sql: "INSERT INTO newerFeature(note) VALUES ('kept across the rollback')")
            try db.execute(sql: "ALTER TABLE stations ADD COLUMN newerColumn TEXT")
            try db.execute(sql: "INSERT INTO grdb_migrations(identifier) VALUES (?)", arguments: [identifier])
            if required { try db.execute(sql: "INSERT INTO requiredMigrations(identifier) VALUES (?)", arguments: [identifier]) }
        }
    }

    static func play() -> JSONValue {
        [
            "eventId": .string(UUID().uuidString.lowercased()), "productId": "tr-9-01", "requestedProductId": "tr-9-01",
            "stationId": "st-9", "playbackSessionId": .string(UUID().uuidString.lowercased()),
            "startedAt": "2026-11-21T10:00:00.000Z", "endedAt": "2026-11-21T10:03:00.000Z",
            "startPosition": 0, "endPosition": 180.5, "offline": true,
            "actions": [["actionType": "PLAYBACK_START", "assetPosition": 0, "timestamp": 1_763_719_200_000]],
        ]
    }
}
