import Foundation
import GRDB
import XCTest

@testable import StateDB

/// The catalog on a real file in WAL mode, as the services use it.
final class StateDBTests: XCTestCase {
    var dir: String!

    override func setUp() {
        dir = NSTemporaryDirectory() + "catalog-\(UUID().uuidString)"
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: dir)
    }

    func testOpensInWALWithFullSyncAndForeignKeys() throws {
        let catalog = try StateDB(stateDirectory: dir)
        try catalog.pool.read { db in
            XCTAssertEqual(try String.fetchOne(db, sql: "PRAGMA journal_mode"), "wal")
            XCTAssertEqual(try Int.fetchOne(db, sql: "PRAGMA synchronous"), 2, "FULL")
            XCTAssertEqual(try Int.fetchOne(db, sql: "PRAGMA foreign_keys"), 1)
        }
        // The connection that commits is the one whose setting makes a commit durable.
        try catalog.pool.writeWithoutTransaction { db in
            XCTAssertEqual(try Int.fetchOne(db, sql: "PRAGMA synchronous"), 2, "FULL on the writer")
            XCTAssertEqual(try Int.fetchOne(db, sql: "PRAGMA foreign_keys"), 1)
        }
        XCTAssertEqual(try catalog.schemaVersion(), StateDB.migrator.migrations.count)
    }

    func testHasEveryTableTheServicesNeed() throws {
        let catalog = try StateDB(stateDirectory: dir)
        let tables = try catalog.pool.read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'grdb_%' AND name NOT LIKE 'sqlite_%'")
        }
        let foundation: Set = [
            "settings", "stations", "files", "mediaItems", "stationItems", "offlineProducts",
            "downloads", "licenses", "playlogOutbox",
        ]
        XCTAssertTrue(foundation.isSubset(of: Set(tables)), "missing: \(foundation.subtracting(tables))")
    }

    func testReopeningAppliesNothingTwiceAndKeepsData() throws {
        do {
            let catalog = try StateDB(stateDirectory: dir)
            try catalog.pool.write { db in
                try db.execute(sql: "INSERT INTO settings(key, value, updatedAt) VALUES ('k', '1', CURRENT_TIMESTAMP)")
            }
        }
        let again = try StateDB(stateDirectory: dir)
        XCTAssertEqual(try again.appliedMigrations(), StateDB.migrator.migrations)
        XCTAssertEqual(try again.pool.read { try String.fetchOne($0, sql: "SELECT value FROM settings WHERE key = 'k'") }, "1")
    }

    /// Opening blocks (a file lock, disk I/O): eight openers on eight threads, as eight processes would.
    func testManyConcurrentOpenersOnAFreshDirectoryAgree() throws {
        let path = dir!
        let lock = NSLock()
        nonisolated(unsafe) var failures: [String] = []
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            do {
                _ = try StateDB(stateDirectory: path).schemaVersion()
            } catch {
                lock.withLock { failures.append("\(error)") }
            }
        }
        XCTAssertEqual(failures, [])
        XCTAssertEqual(try StateDB(stateDirectory: path).appliedMigrations(), StateDB.migrator.migrations)
    }

    func testForeignKeysAreEnforced() throws {
        let catalog = try StateDB(stateDirectory: dir)
        XCTAssertThrowsError(
            try catalog.pool.write { db in
                try db.execute(sql: "INSERT INTO stationItems(stationId, itemId, position) VALUES ('nope', 'nope', 0)")
            })
    }

    func testCheckConstraintsRefuseUnknownStates() throws {
        let catalog = try StateDB(stateDirectory: dir)
        XCTAssertThrowsError(
            try catalog.pool.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO playlogOutbox(recordId, kind, body, sizeBytes, state, createdAt)
                        VALUES ('a', 'play', '{}', 2, 'lost', CURRENT_TIMESTAMP)
                        """)
            })
    }

    func testUnwritableStateDirectoryIsATypedError() throws {
        XCTAssertThrowsError(try StateDB(stateDirectory: "/proc/cassette-cannot-exist")) { error in
            XCTAssertEqual((error as? StateDBError)?.code, .openFailed)
        }
    }
}

extension StateDBTests {
    /// A newer release's migration that changes what this one relies on lists itself in
    /// `requiredMigrations`: this binary then refuses the catalog.
    func testCatalogFromANewerVersionIsRefused() throws {
        do {
            let catalog = try StateDB(stateDirectory: dir)
            try catalog.pool.write { db in
                try db.execute(sql: "INSERT INTO grdb_migrations(identifier) VALUES ('v99-from-the-future')")
                try db.execute(sql: "INSERT INTO requiredMigrations(identifier) VALUES ('v99-from-the-future')")
            }
        }
        XCTAssertThrowsError(try StateDB(stateDirectory: dir)) { error in
            XCTAssertEqual((error as? StateDBError)?.code, .schemaTooNew, "\(error)")
        }
    }

    /// An additive migration of a newer release (an A/B rollback left it behind) is carried
    /// along: the catalog opens, every migration this binary knows is applied, and the newer
    /// one is reported.
    func testCatalogWithANewerAdditiveMigrationOpens() throws {
        do {
            let catalog = try StateDB(stateDirectory: dir)
            try catalog.pool.write { db in
                try db.execute(sql: "CREATE TABLE fromTheFuture(x TEXT)")
                try db.execute(sql: "INSERT INTO grdb_migrations(identifier) VALUES ('v99-from-the-future')")
            }
        }
        let catalog = try StateDB(stateDirectory: dir)
        XCTAssertEqual(catalog.unknownMigrations, ["v99-from-the-future"])
        XCTAssertEqual(catalog.schemaVersionAtOpen, StateDB.migrator.migrations.count)
        XCTAssertEqual(try catalog.appliedMigrations(), StateDB.knownMigrations)
    }
}
