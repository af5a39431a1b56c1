import GRDB

extension Catalog {
    /// Schema changes owned by the player: the player's persisted config and its durable hand-over queue of play events. Registered in `Catalog.migrator`.
    static func playerSchemaV2(_ db: Database) throws {
    }
}
