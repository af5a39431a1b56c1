import Foundation
import GRDB
import StateDB

/// The player's rows of the catalog's `settings` table: one JSON text per key.
struct SettingsStore: Sendable {
    let catalog: StateDB

    func text(forKey key: String) async throws -> String? {
        try await catalog.read { db in
            try String.fetchOne(db, sql: "SELECT value FROM settings WHERE key = ?", arguments: [key])
        }
    }

    func set(_ text: String, forKey key: String) async throws {
        try await catalog.write { db in
            try db.execute(
                sql: """
                    INSERT INTO settings (key, value, updatedAt) VALUES (?, ?, ?)
                    ON CONFLICT(key) DO UPDATE SET value = excluded.value, updatedAt = excluded.updatedAt
                    """, arguments: [key, text, Date().databaseText])
        }
    }
}
