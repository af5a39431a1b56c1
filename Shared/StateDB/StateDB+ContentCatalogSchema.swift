import GRDB

extension StateDB {
    /// The downloader's mirror of the origin's content catalog (sources, categories, items) with
    /// what the device chose (subscribed, selected, saved), and which offline requests the
    /// downloader made by itself. Registered in `StateDB.migrator`.
    static func downloaderSchemaV6(_ db: Database) throws {
        try db.create(table: "catalogSources") { t in
            t.primaryKey("id", .text)
            t.column("name", .text).notNull()
            t.column("description", .text)
            t.column("position", .integer).notNull() // the origin's order
            t.column("subscribed", .boolean).notNull().defaults(to: false)
            t.column("listed", .boolean).notNull().defaults(to: true) // false: the origin no longer lists it
        }
        try db.create(table: "catalogCategories") { t in
            t.primaryKey("id", .text)
            t.column("name", .text).notNull()
            t.column("parentId", .text)
            t.column("position", .integer).notNull()
            t.column("selected", .boolean).notNull().defaults(to: false)
            t.column("listed", .boolean).notNull().defaults(to: true)
        }
        try db.create(table: "catalogItems") { t in
            t.primaryKey("id", .text)
            t.column("productId", .text).notNull()
            t.column("type", .text).notNull().check { ["VIDEO", "TRACK"].contains($0) }
            t.column("title", .text).notNull()
            t.column("sourceId", .text).notNull()
            t.column("categories", .text).notNull() // JSON array of category ids
            t.column("sizeBytes", .integer).notNull()
            t.column("durationSeconds", .double)
            t.column("publishedAt", .text).notNull() // RFC 3339 as the origin wrote it
            t.column("priority", .integer).notNull()
            t.column("expiresAt", .text)
            t.column("saved", .boolean).notNull().defaults(to: false)
            // Removed at the origin but kept because it is saved; forgotten once unsaved.
            t.column("removed", .boolean).notNull().defaults(to: false)
            // The offline request (offlineProducts.token) that holds the item's content, if any.
            t.column("token", .text)
            // Pushed out to make room: not prepositioned again until the origin changes it.
            t.column("reclaimed", .boolean).notNull().defaults(to: false)
            t.column("discoveredAt", .datetime).notNull()
        }
        try db.create(index: "catalogItems_product", on: "catalogItems", columns: ["productId"])
        try db.create(index: "catalogItems_token", on: "catalogItems", columns: ["token"])
        // Requests the downloader made by itself for the catalog; an offline.add of the same
        // product makes them explicit (0), and explicit content is never pushed out for
        // prepositioned content.
        try db.alter(table: "offlineProducts") { t in
            t.add(column: "automatic", .boolean).notNull().defaults(to: false)
        }
    }

    /// Products someone watched or heard (a consumption record), kept after the records are
    /// delivered so that the downloader can tell viewed items from new ones.
    static func reporterSchemaV6(_ db: Database) throws {
        try db.create(table: "consumedProducts") { t in
            t.primaryKey("productId", .text)
            t.column("firstAt", .datetime).notNull()
            t.column("lastAt", .datetime).notNull()
            t.column("records", .integer).notNull().defaults(to: 0)
        }
        // Consumption still waiting in the outbox counts already.
        try db.execute(
            sql: """
                INSERT OR IGNORE INTO consumedProducts (productId, firstAt, lastAt, records)
                SELECT json_extract(body, '$.productId'), MIN(createdAt), MAX(createdAt), COUNT(*)
                FROM playlogOutbox WHERE kind = 'consumption' AND state = 'pending' AND json_valid(body)
                    AND json_extract(body, '$.productId') IS NOT NULL
                GROUP BY json_extract(body, '$.productId')
                """)
    }
}
