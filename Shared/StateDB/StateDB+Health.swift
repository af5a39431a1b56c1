import GRDB

extension StateDB {
    /// For the health gate: reads the migrations table from the file (not only `SELECT 1`,
    /// which touches no page) and confirms every migration this binary knows is applied.
    /// Nil when the catalog is readable and migrated, else what is wrong, in words.
    public func schemaProblem() async -> String? {
        do {
            let missing = try await read { db in
                let applied = try Self.migrator.appliedIdentifiers(db)
                return Self.migrator.migrations.filter { !applied.contains($0) }
            }
            guard missing.isEmpty else {
                return "catalog is not migrated: \(missing.joined(separator: ", ")) not applied"
            }
            return nil
        } catch {
            return "catalog cannot be read: \(error)"
        }
    }
}
