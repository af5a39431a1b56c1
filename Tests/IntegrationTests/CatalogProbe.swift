import GRDB
import StateDB

/// Reads the catalog file the services wrote, from outside them, through GRDB.
struct CatalogProbe {
    let queue: DatabaseQueue

    init(path: String) throws {
        queue = try DatabaseQueue(path: path)
    }

    func journalMode() throws -> String? {
        try queue.read { try String.fetchOne($0, sql: "PRAGMA journal_mode") }
    }

    /// The migrations applied, in the order they were applied.
    func appliedMigrations() throws -> [String] {
        try queue.read { try String.fetchAll($0, sql: "SELECT identifier FROM grdb_migrations ORDER BY rowid") }
    }

    func integrityCheck() throws -> String? {
        try queue.read { try String.fetchOne($0, sql: "PRAGMA integrity_check") }
    }

    func execute(_ sql: String) throws {
        try queue.write { try $0.execute(sql: sql) }
    }

    func setting(_ key: String) throws -> String? {
        try queue.read { try String.fetchOne($0, sql: "SELECT value FROM settings WHERE key = ?", arguments: [key]) }
    }
}
