import Foundation
import GRDB
import OriginAPI
import StateDB
import Wire

/// The content catalog's tables (`catalogSources`, `catalogCategories`, `catalogItems`) and its
/// feed cursor (`settings`, `downloader.catalogCursor`): the mirror of the origin's catalog and
/// what the device chose in it. Every method is one transaction.
struct ContentCatalogStore: Sendable {
    let catalog: StateDB
    static let cursorKey = "downloader.catalogCursor"

    struct SourceRow: Sendable, Equatable {
        var id: String
        var name: String
        var subscribed: Bool
    }

    struct CategoryRow: Sendable, Equatable {
        var id: String
        var name: String
        var parentId: String?
        var selected: Bool
    }

    /// An item with what the device knows of it: its offline request's state (the one the
    /// prepositioning made, else any open request for its product), saved, viewed.
    struct ItemRow: Sendable, Equatable {
        var item: CatalogItem
        var saved: Bool
        var removed: Bool
        var reclaimed: Bool
        var token: String?
        /// The offline request's state, `discovered` when there is none (or it was deleted).
        var state: String
        /// Whether the downloader made the request by itself (prepositioning).
        var automatic: Bool
        /// When the product was last consumed (a consumption record), nil when never.
        var viewedAt: Date?
        var viewed: Bool { viewedAt != nil }
    }

    /// What one refresh changed, for the events.
    struct Delta: Sendable, Equatable {
        var sourcesChanged = false
        var categoriesChanged = false
        var added: [String] = []
        var changed: [String] = []
        var removed: [String] = []
        /// Prepositioned requests of removed items: their content goes.
        var tokensToDelete: [String] = []
        var itemsChanged: Bool { !(added.isEmpty && changed.isEmpty && removed.isEmpty) }
    }

    func cursor() async throws -> String? {
        try await catalog.read { db in
            try String.fetchOne(db, sql: "SELECT value FROM settings WHERE key = ?", arguments: [Self.cursorKey])
        }
    }

    func sources() async throws -> [SourceRow] {
        try await catalog.read { db in
            try Row.fetchAll(db, sql: "SELECT id, name, subscribed FROM catalogSources WHERE listed ORDER BY position")
                .map { SourceRow(id: $0["id"], name: $0["name"], subscribed: $0["subscribed"]) }
        }
    }

    func categories() async throws -> [CategoryRow] {
        try await catalog.read { db in
            try Row.fetchAll(db, sql: "SELECT id, name, parentId, selected FROM catalogCategories WHERE listed ORDER BY position")
                .map { CategoryRow(id: $0["id"], name: $0["name"], parentId: $0["parentId"], selected: $0["selected"]) }
        }
    }

    func items() async throws -> [ItemRow] {
        try await catalog.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT i.*, o.state AS tokenState, o.automatic AS automatic, c.lastAt AS viewedAt
                    FROM catalogItems i
                    LEFT JOIN offlineProducts o ON o.token = COALESCE(
                        (SELECT token FROM offlineProducts WHERE token = i.token AND state != 'deleted'),
                        (SELECT token FROM offlineProducts WHERE requestedProductId = i.productId AND state != 'deleted'
                         ORDER BY requestedAt DESC LIMIT 1))
                    LEFT JOIN consumedProducts c ON c.productId = i.productId
                    ORDER BY i.rowid
                    """
            ).map(Self.itemRow)
        }
    }

    private static func itemRow(_ row: Row) -> ItemRow {
        let categories = (try? JSONValue.parse(Array((row["categories"] as String).utf8)))?.arrayValue?.compactMap(\.stringValue) ?? []
        let item = CatalogItem(
            id: row["id"], productId: row["productId"], type: row["type"], title: row["title"],
            sourceId: row["sourceId"], categories: categories, sizeBytes: row["sizeBytes"],
            durationSeconds: row["durationSeconds"], publishedAt: row["publishedAt"],
            priority: row["priority"], expiresAt: row["expiresAt"])
        let tokenState: String? = row["tokenState"]
        let live = tokenState != nil && tokenState != "deleted"
        return ItemRow(
            item: item, saved: row["saved"], removed: row["removed"], reclaimed: row["reclaimed"],
            token: live ? row["token"] : nil, state: live ? tokenState! : "discovered",
            automatic: live && ((row["automatic"] as Bool?) ?? false), viewedAt: row.date("viewedAt"))
    }

    /// What `service.status` shows of the catalog.
    struct Counts: Sendable {
        var items: Int
        var prepositioned: Int
        var prepositionedBytes: Int64
        var subscribed: Int
        var selected: Int
    }

    func counts() async throws -> Counts {
        try await catalog.read { db in
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT (SELECT COUNT(*) FROM catalogItems) AS items,
                           (SELECT COUNT(*) FROM catalogItems i JOIN offlineProducts o ON o.token = i.token
                            WHERE o.automatic AND o.state != 'deleted') AS prepositioned,
                           (SELECT COALESCE(SUM(i.sizeBytes), 0) FROM catalogItems i JOIN offlineProducts o ON o.token = i.token
                            WHERE o.automatic AND o.state != 'deleted') AS bytes,
                           (SELECT COUNT(*) FROM catalogSources WHERE listed AND subscribed) AS subscribed,
                           (SELECT COUNT(*) FROM catalogCategories WHERE listed AND selected) AS selected
                    """)!
            return Counts(
                items: row["items"], prepositioned: row["prepositioned"], prepositionedBytes: row["bytes"],
                subscribed: row["subscribed"], selected: row["selected"])
        }
    }

    // MARK: Refresh

    /// Applies one refresh: the full lists of sources and categories, and the item changes
    /// (`full`: the whole current set, so any item not in it is gone). Saves the cursor last.
    func apply(
        sources: [CatalogSource], categories: [CatalogCategory], changes: CatalogChanges, full: Bool,
        now: Date
    ) async throws -> Delta {
        try await catalog.write { db in
            var delta = Delta()
            delta.sourcesChanged = try Self.mirror(
                sources.enumerated().map { ($1.id, $1.name, $1.description, nil, $0) },
                table: "catalogSources", db: db)
            delta.categoriesChanged = try Self.mirror(
                categories.enumerated().map { ($1.id, $1.name, nil, $1.parentId, $0) },
                table: "catalogCategories", db: db)
            var gone = Set(changes.removed)
            if full {
                let known = try String.fetchAll(db, sql: "SELECT id FROM catalogItems WHERE NOT removed")
                gone.formUnion(Set(known).subtracting(changes.items.map(\.id)))
            }
            for item in changes.items {
                gone.remove(item.id)
                let existing = try Row.fetchOne(db, sql: "SELECT * FROM catalogItems WHERE id = ?", arguments: [item.id]).map(Self.itemRow)
                let categories = String(decoding: JSONValue.array(item.categories.map(JSONValue.string)).serialized(), as: UTF8.self)
                if let existing {
                    guard existing.item != item || existing.removed else { continue }
                    delta.changed.append(item.id)
                    // Another product behind the same item: the old request no longer holds it.
                    let dropToken = existing.item.productId != item.productId
                    try db.execute(
                        sql: """
                            UPDATE catalogItems SET productId = ?, type = ?, title = ?, sourceId = ?, categories = ?, sizeBytes = ?,
                                durationSeconds = ?, publishedAt = ?, priority = ?, expiresAt = ?, removed = 0, reclaimed = 0,
                                token = CASE WHEN ? THEN NULL ELSE token END
                            WHERE id = ?
                            """,
                        arguments: [
                            item.productId, item.type, item.title, item.sourceId, categories, item.sizeBytes,
                            item.durationSeconds, item.publishedAt, item.priority, item.expiresAt, dropToken, item.id,
                        ])
                    if dropToken, let token = existing.token, try Self.isAutomatic(token, db: db) { delta.tokensToDelete.append(token) }
                } else {
                    delta.added.append(item.id)
                    try db.execute(
                        sql: """
                            INSERT INTO catalogItems (id, productId, type, title, sourceId, categories, sizeBytes, durationSeconds,
                                publishedAt, priority, expiresAt, discoveredAt)
                            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                            """,
                        arguments: [
                            item.id, item.productId, item.type, item.title, item.sourceId, categories, item.sizeBytes,
                            item.durationSeconds, item.publishedAt, item.priority, item.expiresAt, now.databaseText,
                        ])
                }
            }
            for id in gone.sorted() {
                guard let row = try Row.fetchOne(db, sql: "SELECT saved, removed, token FROM catalogItems WHERE id = ?", arguments: [id]) else { continue }
                if row["saved"] as Bool {
                    // Saved content stays, listed as removed, until it is unsaved.
                    if !(row["removed"] as Bool) {
                        try db.execute(sql: "UPDATE catalogItems SET removed = 1 WHERE id = ?", arguments: [id])
                        delta.changed.append(id)
                    }
                    continue
                }
                try db.execute(sql: "DELETE FROM catalogItems WHERE id = ?", arguments: [id])
                delta.removed.append(id)
                if let token = row["token"] as String?, try Self.isAutomatic(token, db: db) { delta.tokensToDelete.append(token) }
            }
            try db.execute(
                sql: """
                    INSERT INTO settings (key, value, updatedAt) VALUES (?, ?, ?)
                    ON CONFLICT(key) DO UPDATE SET value = excluded.value, updatedAt = excluded.updatedAt
                    """, arguments: [Self.cursorKey, changes.cursor, now.databaseText])
            return delta
        }
    }

    /// Whether a request was made by the downloader alone and still holds content.
    private static func isAutomatic(_ token: String, db: Database) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT automatic AND state != 'deleted' FROM offlineProducts WHERE token = ?", arguments: [token]) ?? false
    }

    /// Upserts the listed rows of a sources or categories table, keeping what the device chose,
    /// and marks the others unlisted. True when anything a client sees changed.
    private static func mirror(
        _ rows: [(id: String, name: String, description: String?, parentId: String?, position: Int)],
        table: String, db: Database
    ) throws -> Bool {
        let isSources = table == "catalogSources"
        let before = try Row.fetchAll(db, sql: "SELECT id, name, \(isSources ? "description" : "parentId") AS extra, position FROM \(table) WHERE listed")
            .map { "\($0["id"] as String)|\($0["name"] as String)|\(($0["extra"] as String?) ?? "")|\($0["position"] as Int)" }
        try db.execute(sql: "UPDATE \(table) SET listed = 0")
        for row in rows {
            try db.execute(
                sql: """
                    INSERT INTO \(table) (id, name, \(isSources ? "description" : "parentId"), position, listed) VALUES (?, ?, ?, ?, 1)
                    ON CONFLICT(id) DO UPDATE SET name = excluded.name, \(isSources ? "description" : "parentId") = excluded.\(isSources ? "description" : "parentId"),
                        position = excluded.position, listed = 1
                    """, arguments: [row.id, row.name, isSources ? row.description : row.parentId, row.position])
        }
        let after = rows.map { "\($0.id)|\($0.name)|\((isSources ? $0.description : $0.parentId) ?? "")|\($0.position)" }
        return before != after
    }

    // MARK: Choices

    /// Nil when no listed source has the id; else whether the flag moved.
    func setSubscribed(_ sourceId: String, _ on: Bool) async throws -> Bool? {
        try await setFlag(table: "catalogSources", column: "subscribed", id: sourceId, on)
    }

    func setSelected(_ categoryId: String, _ on: Bool) async throws -> Bool? {
        try await setFlag(table: "catalogCategories", column: "selected", id: categoryId, on)
    }

    private func setFlag(table: String, column: String, id: String, _ on: Bool) async throws -> Bool? {
        try await catalog.write { db in
            guard let was = try Bool.fetchOne(db, sql: "SELECT \(column) FROM \(table) WHERE id = ? AND listed", arguments: [id]) else { return nil }
            try db.execute(sql: "UPDATE \(table) SET \(column) = ? WHERE id = ?", arguments: [on, id])
            return was != on
        }
    }

    /// `catalog.save`: nil for an unknown item; else whether it moved, and when an item removed
    /// at the origin is unsaved, it is forgotten and its prepositioned request (if any) returned.
    func setSaved(_ itemId: String, _ on: Bool) async throws -> (changed: Bool, forgotten: Bool, tokenToDelete: String?)? {
        try await catalog.write { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT saved, removed, token FROM catalogItems WHERE id = ?", arguments: [itemId]) else { return nil }
            let was: Bool = row["saved"]
            if !on, row["removed"] as Bool {
                try db.execute(sql: "DELETE FROM catalogItems WHERE id = ?", arguments: [itemId])
                let token: String? = row["token"]
                let drop = try token.map { try Self.isAutomatic($0, db: db) } ?? false
                return (true, true, drop ? token : nil)
            }
            try db.execute(sql: "UPDATE catalogItems SET saved = ? WHERE id = ?", arguments: [on, itemId])
            return (was != on, false, nil)
        }
    }

    // MARK: Prepositioning

    func setToken(_ itemId: String, token: String) async throws {
        try await catalog.write { db in
            try db.execute(sql: "UPDATE catalogItems SET token = ? WHERE id = ?", arguments: [token, itemId])
        }
    }

    /// Items whose prepositioned content was pushed out for room, and their requests dropped.
    func markReclaimed(_ itemIds: [String]) async throws {
        try await catalog.write { db in
            for id in itemIds {
                try db.execute(sql: "UPDATE catalogItems SET reclaimed = 1, token = NULL WHERE id = ?", arguments: [id])
            }
        }
    }

    /// Requests waiting for room (`CacheLimit`): the sizes of the files they still lack, those
    /// someone asked for explicitly apart from prepositioned ones (nil: none waits).
    func waitingForRoom() async throws -> (explicit: [Int64]?, automatic: [Int64]?) {
        try await catalog.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT p.automatic AS automatic, f.sizeBytes AS size FROM offlineProducts p
                    JOIN downloads d ON d.ownerKind = 'product' AND d.ownerId = p.token
                    JOIN files f ON f.id = d.fileId
                    WHERE p.state = 'idle' AND p.error = 'CacheLimit' AND f.state != 'verified'
                    """)
            var explicit: [Int64]?
            var automatic: [Int64]?
            for row in rows {
                let size: Int64 = row["size"] ?? 0
                if row["automatic"] as Bool { automatic = (automatic ?? []) + [size] } else { explicit = (explicit ?? []) + [size] }
            }
            return (explicit, automatic)
        }
    }
}
