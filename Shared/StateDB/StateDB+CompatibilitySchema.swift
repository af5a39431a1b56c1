import GRDB

extension StateDB {
    /// Rollback safety (docs/catalog.md, "Rollbacks"): `requiredMigrations` lists the migrations
    /// a binary must know to open the catalog. A migration that is not additive (it drops or
    /// renames a table or column, changes what a column means, or adds a constraint that older
    /// writers would break) inserts its own identifier here, in its own transaction; an
    /// additive one does not, so a binary of the previous release, which does not know it,
    /// still opens the catalog after an A/B rollback.
    static func compatibilitySchemaV9(_ db: Database) throws {
        try db.create(table: "requiredMigrations") { t in
            t.primaryKey("identifier", .text)
        }
    }

    /// `metricTotals`: the counters each service publishes as OpenMetrics totals
    /// (`cassette_*_total`), kept across restarts. One row per service and metric; each
    /// service writes only its own rows, batched (at most about once a minute, and at stop).
    static func metricTotalsSchemaV9(_ db: Database) throws {
        try db.create(table: "metricTotals") { t in
            t.column("service", .text).notNull()
            t.column("name", .text).notNull()
            t.column("value", .double).notNull().defaults(to: 0)
            t.column("updatedAt", .datetime).notNull()
            t.primaryKey(["service", "name"])
        }
    }

    /// The applied migrations this binary does not know, and those of them that it must know
    /// to use the catalog (listed in `requiredMigrations` by a newer binary).
    static func unknownMigrations(_ db: Database) throws -> (unknown: [String], required: [String]) {
        let known = Set(migrator.migrations)
        let unknown = try migrator.appliedIdentifiers(db).subtracting(known).sorted()
        guard !unknown.isEmpty, try db.tableExists("requiredMigrations") else { return (unknown, []) }
        let required = try Set(String.fetchAll(db, sql: "SELECT identifier FROM requiredMigrations"))
        return (unknown, unknown.filter(required.contains))
    }
}
