import GRDB

extension StateDB {
    /// Schema changes owned by the downloader: the download engine's queue and item states. Registered in `StateDB.migrator`.
    static func downloaderSchemaV2(_ db: Database) throws {
        // What the engine needs to resume exactly after a crash or restart, per file:
        // the URL to fetch (files.urlPath is only the cache key, without the query that may
        // carry a signature), how many attempts failed (after N the file's owners are Failed),
        // and the last failure's name and human reason for status and events.
        try db.alter(table: "files") { t in
            t.add(column: "url", .text)
            t.add(column: "attempts", .integer).notNull().defaults(to: 0)
            t.add(column: "error", .text)
            t.add(column: "reason", .text)
        }
        // offline.status carries a human reason next to the error name (VOC).
        try db.alter(table: "offlineProducts") { t in
            t.add(column: "reason", .text)
        }
        // A station's last sync outcome, so stations.list and status can say why it is incomplete.
        try db.alter(table: "stations") { t in
            t.add(column: "lastError", .text)
        }
        // The scheduler's question: which files are wanted and not yet verified, oldest first.
        try db.create(index: "downloads_state", on: "downloads", columns: ["state", "fileId"])
        try db.create(index: "stationItems_item", on: "stationItems", columns: ["itemId"])
        try db.create(index: "mediaItems_file", on: "mediaItems", columns: ["fileId"])
    }

    /// Licenses and re-validation.
    static func downloaderSchemaV3(_ db: Database) throws {
        // The license in force for a token (Brightcove: one per offline token, renewed in place),
        // the re-offline waiting for its new file (JSON of the new playbackinfo; nil when none),
        // and the last re-validation's time and failure, for offline.status.
        try db.alter(table: "offlineProducts") { t in
            t.add(column: "licenseId", .text)
            t.add(column: "staged", .text)
            t.add(column: "revalidatedAt", .datetime)
            t.add(column: "revalidationError", .text)
        }
        // A license belongs to the token it was requested for and goes with its content.
        try db.alter(table: "licenses") { t in
            t.add(column: "token", .text)
            t.add(column: "rentalSeconds", .integer)
        }
        try db.create(index: "licenses_token", on: "licenses", columns: ["token"])
    }

    /// The download queue in request order: the engine's next files are the first queued
    /// `downloads` rows by id, read off this index without looking at the rest of the queue.
    static func downloaderSchemaV4(_ db: Database) throws {
        try db.create(index: "downloads_queue", on: "downloads", columns: ["state", "id"])
    }

    /// HLS presentations and product images: a product's files beyond its main one.
    static func downloaderSchemaV5(_ db: Database) throws {
        // Every file a product needs besides `mediaItems.fileId` (for HLS, the master playlist):
        // media playlists, segments, init sections and images, each named as the local media
        // server serves it (`/p/{productId}/{name}`). A file is listed once per product however
        // many playlists or byte ranges read it. The product is `cached` once all are verified.
        try db.create(table: "productFiles") { t in
            t.column("productId", .text).notNull().references("mediaItems", onDelete: .cascade)
            t.column("name", .text).notNull()
            t.column("fileId", .integer).notNull().references("files", onDelete: .cascade)
            t.column("role", .text).notNull().check { ["playlist", "segment", "init", "image"].contains($0) }
            t.column("position", .integer).notNull()
            t.primaryKey(["productId", "name"])
        }
        try db.create(index: "productFiles_file", on: "productFiles", columns: ["fileId"])
    }

    /// `offline.add {"now":true}`: the token's files download outside the download windows too
    /// (the per-item exception, as `allowCellular` is for the network).
    static func downloaderSchemaV10(_ db: Database) throws {
        try db.alter(table: "offlineProducts") { t in
            t.add(column: "downloadNow", .boolean).notNull().defaults(to: false)
        }
    }
}
