import Foundation
import GRDB
import StateDB

/// How long what is held stays valid (Feed.fm "Expiration"): which stations and products the
/// origin is asked to extend, the new `stations.expiresAt` and `offlineProducts.offlineValidUntil`
/// it granted, and the deletion of `onExpiry = delete` stations once their expiry passed.
struct ExpiryStore: Sendable {
    let catalog: StateDB

    /// Every station held and every product requested and not deleted, by id.
    struct Held: Sendable {
        var stationIds: [String]
        var productIds: [String]
    }

    /// A station's new expiry, as the origin granted it.
    struct StationExtension: Sendable {
        var id: String
        var expiresAt: Date
        var revalidateAt: Date?
        /// `delete` or `keep`; nil keeps the stored one.
        var onExpiry: String?
    }

    /// A requested product's new validity, as the origin granted it.
    struct ProductExtension: Sendable {
        var requestedProductId: String
        var validUntil: Date
    }

    func held() async throws -> Held {
        try await catalog.read { db in
            Held(
                stationIds: try String.fetchAll(db, sql: "SELECT id FROM stations ORDER BY id"),
                productIds: try String.fetchAll(
                    db,
                    sql: """
                        SELECT DISTINCT requestedProductId FROM offlineProducts WHERE state != 'deleted' ORDER BY requestedProductId
                        """))
        }
    }

    /// Stores the new expiries in one transaction. Products get only their validity:
    /// `offlineRevalidateAt` moves with a re-validation alone, or an extension would keep a
    /// redelivered product from ever being re-offlined (TIDAL).
    func recordExtension(stations: [StationExtension], products: [ProductExtension]) async throws {
        try await catalog.write { db in
            for station in stations {
                try db.execute(
                    sql: """
                        UPDATE stations SET expiresAt = ?, revalidateAt = COALESCE(?, revalidateAt),
                            onExpiry = COALESCE(?, onExpiry) WHERE id = ?
                        """, arguments: [station.expiresAt.databaseText, station.revalidateAt?.databaseText, station.onExpiry, station.id])
            }
            for product in products {
                try db.execute(
                    sql: """
                        UPDATE offlineProducts SET offlineValidUntil = ? WHERE requestedProductId = ? AND state != 'deleted'
                        """, arguments: [product.validUntil.databaseText, product.requestedProductId])
            }
        }
    }

    /// Deletes, in one transaction, the stations with `onExpiry = delete` whose `expiresAt` is not
    /// after `now`: their requests, items and row, and the files nothing else holds. Returns the
    /// stations deleted and the files whose bytes the caller deletes after the commit.
    func deleteExpiredStations(at now: Date) async throws -> (stationIds: [String], garbage: [(id: Int64, path: String)]) {
        try await catalog.write { db -> ([String], [(id: Int64, path: String)]) in
            let ids = try String.fetchAll(
                db,
                sql: """
                    SELECT id FROM stations WHERE onExpiry = 'delete' AND expiresAt IS NOT NULL AND expiresAt <= ? ORDER BY id
                    """, arguments: [now.databaseText])
            guard !ids.isEmpty else { return ([], []) }
            for id in ids {
                try db.execute(sql: "DELETE FROM downloads WHERE ownerKind = 'station' AND ownerId = ?", arguments: [id])
                try db.execute(sql: "DELETE FROM stationItems WHERE stationId = ?", arguments: [id])
                try db.execute(sql: "DELETE FROM stations WHERE id = ?", arguments: [id])
            }
            return (ids, try FileStore.collectGarbage(db: db))
        }
    }
}
