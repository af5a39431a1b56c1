import Foundation
import GRDB
import StateDB

/// Keeps the policy in the catalog's `settings` table under `downloader.policy`, as the whole
/// policy in JSON: what `policy.set` chose survives restarts and wins over the config file.
struct PolicyStore: Sendable {
    let catalog: StateDB
    static let key = "downloader.policy"

    /// The stored policy, or `defaults` when none was ever set. A stored value that no longer
    /// decodes is ignored (and replaced at the next `policy.set`) rather than fatal.
    func load(defaults: DownloadPolicy) async -> DownloadPolicy {
        guard
            let text = try? await catalog.read({ db in
                try String.fetchOne(db, sql: "SELECT value FROM settings WHERE key = ?", arguments: [Self.key])
            }), let stored = try? JSONDecoder().decode(DownloadPolicy.self, from: Data(text.utf8))
        else { return defaults }
        return stored
    }

    func save(_ policy: DownloadPolicy) async throws {
        let text = String(decoding: try JSONEncoder().encode(policy), as: UTF8.self)
        try await catalog.write { db in
            try db.execute(
                sql: """
                    INSERT INTO settings (key, value, updatedAt) VALUES (?, ?, ?)
                    ON CONFLICT(key) DO UPDATE SET value = excluded.value, updatedAt = excluded.updatedAt
                    """, arguments: [Self.key, text, Date().databaseText])
        }
    }
}
