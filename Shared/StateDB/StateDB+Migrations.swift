import GRDB

extension StateDB {
    /// Every schema change, in order, in this one place. A migration once shipped is never
    /// edited: a later change appends a new one. docs/catalog.md describes the resulting schema.
    ///
    /// The release before may run on a catalog migrated by this one (an A/B update that rolls
    /// back): a migration is additive (new tables, new nullable or defaulted columns, new
    /// indexes), or else it lists itself in `requiredMigrations`, and then an older binary
    /// refuses the catalog rather than write to tables it does not understand.
    static var migrator: DatabaseMigrator {
        var m = DatabaseMigrator()
        m.registerMigration("v1-foundation") { db in
            // Key/value settings persisted by the services (policy, player config, trusted time).
            try db.create(table: "settings") { t in
                t.primaryKey("key", .text)
                t.column("value", .text).notNull() // JSON
                t.column("updatedAt", .datetime).notNull()
            }
            // Offline stations (Feed.fm): what the server last said about each one.
            try db.create(table: "stations") { t in
                t.primaryKey("id", .text)
                t.column("name", .text).notNull()
                t.column("manifestHash", .text)
                t.column("targetMinutes", .integer)
                t.column("expiresAt", .datetime)
                t.column("revalidateAt", .datetime)
                t.column("onExpiry", .text).notNull().defaults(to: "delete")
                    .check { ["delete", "keep"].contains($0) }
                t.column("syncedAt", .datetime)
                t.column("createdAt", .datetime).notNull()
            }
            // Downloaded or downloading content files; shared by stations and products, so a
            // file is deleted only when nothing references it.
            try db.create(table: "files") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("urlPath", .text).notNull().unique() // cache key: URL path only
                t.column("localPath", .text).notNull().unique()
                t.column("mimeType", .text)
                t.column("sizeBytes", .integer) // declared by the origin
                t.column("sha256", .text)
                t.column("bytesOnDisk", .integer).notNull().defaults(to: 0)
                t.column("etag", .text)
                t.column("state", .text).notNull().defaults(to: "pending")
                    .check { ["pending", "partial", "complete", "verified", "corrupt"].contains($0) }
                t.column("createdAt", .datetime).notNull()
                t.column("completedAt", .datetime)
            }
            // Playable items (tracks, videos), whether from a station or offlined on their own.
            try db.create(table: "mediaItems") { t in
                t.primaryKey("id", .text) // the actual product id
                t.column("productType", .text).notNull().defaults(to: "TRACK")
                t.column("title", .text)
                t.column("artist", .text)
                t.column("album", .text)
                t.column("durationSeconds", .double)
                t.column("audioQuality", .text)
                t.column("codec", .text)
                t.column("sampleRate", .integer)
                t.column("bitDepth", .integer)
                t.column("trackGain", .double)
                t.column("trackPeak", .double)
                t.column("albumGain", .double)
                t.column("albumPeak", .double)
                t.column("manifestType", .text).notNull().defaults(to: "progressive")
                t.column("fileId", .integer).references("files", onDelete: .setNull)
            }
            try db.create(table: "stationItems") { t in
                t.column("stationId", .text).notNull().references("stations", onDelete: .cascade)
                t.column("itemId", .text).notNull().references("mediaItems", onDelete: .cascade)
                t.column("position", .integer).notNull()
                t.column("playedAt", .datetime)
                t.primaryKey(["stationId", "itemId"])
            }
            // Media products offlined through offline.add (TIDAL OE / Brightcove): one row per
            // token, which clients keep across restarts.
            try db.create(table: "offlineProducts") { t in
                t.primaryKey("token", .text)
                t.column("requestedProductId", .text).notNull()
                t.column("productId", .text).references("mediaItems", onDelete: .setNull)
                t.column("productType", .text).notNull().defaults(to: "TRACK")
                t.column("quality", .text)
                t.column("state", .text).notNull().defaults(to: "queued")
                t.column("manifestHash", .text)
                t.column("offlineRevalidateAt", .datetime)
                t.column("offlineValidUntil", .datetime)
                t.column("allowCellular", .boolean).notNull().defaults(to: false)
                t.column("options", .text) // JSON: bitrate, subtitles, rental…
                t.column("error", .text)
                t.column("requestedAt", .datetime).notNull()
                t.column("startedAt", .datetime)
                t.column("endedAt", .datetime)
            }
            try db.create(index: "offlineProducts_requested", on: "offlineProducts", columns: ["requestedProductId"])
            // Transfers: one row per file being fetched for an owner (station or product).
            try db.create(table: "downloads") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("fileId", .integer).notNull().references("files", onDelete: .cascade)
                t.column("ownerKind", .text).notNull().check { ["station", "product"].contains($0) }
                t.column("ownerId", .text).notNull()
                t.column("state", .text).notNull().defaults(to: "queued")
                t.column("reason", .text)
                t.column("attempts", .integer).notNull().defaults(to: 0)
                t.column("updatedAt", .datetime).notNull()
                t.uniqueKey(["fileId", "ownerKind", "ownerId"])
            }
            // Licenses and content keys (Brightcove purchase/rental, HLS AES-128).
            try db.create(table: "licenses") { t in
                t.primaryKey("id", .text)
                t.column("productId", .text).notNull()
                t.column("kind", .text).notNull().check { ["purchase", "rental"].contains($0) }
                t.column("requestedAt", .datetime).notNull()
                t.column("expiresAt", .datetime)
                t.column("keys", .blob) // JSON {keyId: base64}
            }
            // The reporter's outbox: plays and consumption records waiting for the origin.
            try db.create(table: "playlogOutbox") { t in
                t.primaryKey("recordId", .text) // eventId or recordId (UUID)
                t.column("kind", .text).notNull().check { ["play", "consumption"].contains($0) }
                t.column("body", .text).notNull() // the JSON sent to the origin
                t.column("sizeBytes", .integer).notNull()
                t.column("state", .text).notNull().defaults(to: "pending")
                    .check { ["pending", "delivered", "rejected"].contains($0) }
                t.column("attempts", .integer).notNull().defaults(to: 0)
                t.column("reason", .text)
                t.column("createdAt", .datetime).notNull()
                t.column("deliveredAt", .datetime)
            }
            try db.create(index: "playlogOutbox_pending", on: "playlogOutbox", columns: ["state", "createdAt"])
        }
        // Each service's own later changes live in a file named after it (StateDB+<Service>Schema),
        // so work on one service never edits another's migration. The order here is final.
        m.registerMigration("v2-downloader", migrate: downloaderSchemaV2)
        m.registerMigration("v2-player", migrate: playerSchemaV2)
        m.registerMigration("v2-reporter", migrate: reporterSchemaV2)
        m.registerMigration("v3-downloader", migrate: downloaderSchemaV3)
        m.registerMigration("v4-downloader-queue", migrate: downloaderSchemaV4)
        m.registerMigration("v5-downloader-hls", migrate: downloaderSchemaV5)
        m.registerMigration("v6-downloader-catalog", migrate: downloaderSchemaV6)
        m.registerMigration("v6-reporter-consumed", migrate: reporterSchemaV6)
        m.registerMigration("v7-reporter-verdicts", migrate: reporterSchemaV7)
        m.registerMigration("v8-player-metrics", migrate: playerSchemaV8)
        m.registerMigration("v8-reporter-metrics", migrate: reporterSchemaV8)
        m.registerMigration("v9-compatibility", migrate: compatibilitySchemaV9)
        m.registerMigration("v9-metric-totals", migrate: metricTotalsSchemaV9)
        m.registerMigration("v10-downloader-windows", migrate: downloaderSchemaV10)
        return m
    }
}
