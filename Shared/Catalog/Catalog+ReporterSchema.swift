import GRDB

extension Catalog {
    /// Schema changes owned by the reporter: the reporter's outbox bookkeeping. Registered in `Catalog.migrator`.
    static func reporterSchemaV2(_ db: Database) throws {
    }
}
