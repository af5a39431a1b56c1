import GRDB

extension Catalog {
    /// Schema changes owned by the downloader: the download engine's queue and item states. Registered in `Catalog.migrator`.
    static func downloaderSchemaV2(_ db: Database) throws {
    }
}
