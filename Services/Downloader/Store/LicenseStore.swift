import Foundation
import GRDB
import OriginClient
import StateDB
import Wire

/// The catalog's `licenses` rows (docs/catalog.md) and `offlineProducts.licenseId`: one token's
/// license in force, kept with its keys in the catalog, whose file only the services' user and
/// group can read (the keys never sit in a file of their own). A license goes with the content it
/// licenses, so most of its writes run inside the transaction that stores or drops that content
/// (the `static` functions); the others are transactions of their own.
struct LicenseStore: Sendable {
    let catalog: StateDB

    /// The terms of `token`'s license in force, for a renewal that names none.
    func currentTerms(token: String) async throws -> LicenseTerms? {
        try await catalog.read { db in try Self.currentTerms(token: token, db: db) }
    }

    /// Makes `license` the token's license in force (a renewal), dropping the one it replaces.
    func renew(_ license: GrantedLicense, token: String, productId: String) async throws {
        try await catalog.write { db in
            try Self.store(license, token: token, productId: productId, current: true, db: db)
        }
    }

    // MARK: Inside a caller's transaction

    /// Stores `license` for `token`. `current: true` makes it the token's license in force and
    /// drops the one it replaces (a renewal); `false` keeps it aside for a re-offline that has not
    /// been committed yet.
    static func store(_ license: GrantedLicense, token: String, productId: String, current: Bool, db: Database) throws {
        let keys = JSONValue.object(license.keys.mapValues { .string(Data($0).base64EncodedString()) })
        try db.execute(
            sql: """
                INSERT INTO licenses (id, productId, kind, requestedAt, expiresAt, keys, token, rentalSeconds)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET requestedAt = excluded.requestedAt, expiresAt = excluded.expiresAt,
                    keys = excluded.keys, token = excluded.token, rentalSeconds = excluded.rentalSeconds
                """,
            arguments: [
                license.id, productId, license.terms.kind, license.requestedAt.databaseText, license.expiresAt?.databaseText,
                Data(keys.serialized()), token, license.terms.rentalSeconds,
            ])
        if current { try makeCurrent(license.id, token: token, db: db) }
    }

    /// Points `token` at `licenseId` and deletes every other license of the token.
    static func makeCurrent(_ licenseId: String, token: String, db: Database) throws {
        try db.execute(sql: "UPDATE offlineProducts SET licenseId = ? WHERE token = ?", arguments: [licenseId, token])
        try db.execute(sql: "DELETE FROM licenses WHERE token = ? AND id != ?", arguments: [token, licenseId])
    }

    /// Deletes `token`'s licenses and their keys (the content is going).
    static func delete(token: String, db: Database) throws {
        try db.execute(sql: "DELETE FROM licenses WHERE token = ?", arguments: [token])
        try db.execute(sql: "UPDATE offlineProducts SET licenseId = NULL WHERE token = ?", arguments: [token])
    }

    static func delete(licenseId: String, db: Database) throws {
        try db.execute(sql: "DELETE FROM licenses WHERE id = ?", arguments: [licenseId])
    }

    /// The terms of `token`'s license in force, for a renewal that names none.
    static func currentTerms(token: String, db: Database) throws -> LicenseTerms? {
        try Row.fetchOne(
            db,
            sql: """
                SELECT l.kind, l.rentalSeconds FROM offlineProducts p JOIN licenses l ON l.id = p.licenseId WHERE p.token = ?
                """, arguments: [token]
        ).map { LicenseTerms(kind: $0["kind"], rentalSeconds: $0["rentalSeconds"]) }
    }

    /// `offline.status`'s `license`: kind, request time, expiry (null for a purchase) and the ids
    /// of the keys held (never the keys). nil when the token has none.
    static func statusJSON(licenseId: String?, db: Database) throws -> JSONValue? {
        guard let licenseId, let row = try Row.fetchOne(db, sql: "SELECT * FROM licenses WHERE id = ?", arguments: [licenseId]) else {
            return nil
        }
        let keyIds = (row["keys"] as Data?).flatMap { try? JSONValue.parse(Array($0)) }?.objectValue?.keys.sorted() ?? []
        func date(_ key: String) -> JSONValue { row.date(key).map(UTCTimestamp.rfc3339).map(JSONValue.string) ?? .null }
        return [
            "licenseId": .string(licenseId), "kind": .string(row["kind"]), "requestedAt": date("requestedAt"),
            "expiresAt": date("expiresAt"),
            "rentalSeconds": (row["rentalSeconds"] as Int?).map { .number(Double($0)) } ?? .null,
            "keyIds": .array(keyIds.map(JSONValue.string)),
        ]
    }
}
