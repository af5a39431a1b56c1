import Catalog
import Foundation
import GRDB

/// TIDAL re-validation's side of `offlineProducts`: which cached products are due, their
/// refreshed validity (`offlineRevalidateAt`, `offlineValidUntil`, `revalidatedAt`,
/// `revalidationError`), and a re-offline staged beside the old file (`staged`, with its queue
/// row and its license kept aside) until one transaction swaps the product to it.
struct RevalidationStore: Sendable {
    let catalog: Catalog

    /// A cached product past its `offlineRevalidateAt`.
    struct Due: Sendable {
        var token: String
        var requestedProductId: String
        /// The actual product id, or the requested one.
        var productId: String
    }

    /// What a re-validation compares the origin's answer with.
    struct Held: Sendable {
        var quality: String?
        var manifestHash: String?
        /// A re-offline under way; nil when none (or one this version cannot read).
        var staged: StagedRevision?
    }

    /// What a swap committed: the product's new actual id, and the files nothing holds any more.
    struct Swapped: Sendable {
        var productId: String
        var garbage: [(id: Int64, path: String)]
    }

    /// Cached products whose `offlineRevalidateAt` is not after `now` (or never set), oldest request first.
    func due(at now: Date) async throws -> [Due] {
        try await catalog.read { db in
            try Row.fetchAll(db, sql: """
                SELECT token, requestedProductId, productId FROM offlineProducts
                WHERE state = 'cached' AND (offlineRevalidateAt IS NULL OR offlineRevalidateAt <= ?)
                ORDER BY requestedAt
                """, arguments: [now]).map { Due(token: $0["token"], requestedProductId: $0["requestedProductId"],
                                                 productId: $0["productId"] ?? $0["requestedProductId"]) }
        }
    }

    func held(token: String) async throws -> Held? {
        try await catalog.read { db in
            try Row.fetchOne(db, sql: "SELECT quality, manifestHash, staged FROM offlineProducts WHERE token = ?", arguments: [token])
                .map { Held(quality: $0["quality"], manifestHash: $0["manifestHash"],
                            staged: ($0["staged"] as String?).flatMap(StagedRevision.decode)) }
        }
    }

    /// Why the last re-validation failed; nothing else changes.
    func recordFailure(token: String, error: String) async throws {
        try await catalog.write { db in
            try db.execute(sql: "UPDATE offlineProducts SET revalidationError = ? WHERE token = ?", arguments: [error, token])
        }
    }

    /// The same manifest: in one transaction the validity and, when given, the license are
    /// refreshed, and a re-offline under way is dropped (the origin went back to what is held).
    /// Returns the files to delete after the commit.
    func refresh(token: String, validity: Validity, license: GrantedLicense?,
                 requestedProductId: String) async throws -> [(id: Int64, path: String)] {
        try await catalog.write { db -> [(id: Int64, path: String)] in
            try Self.store(validity, token: token, db: db)
            if let license { try LicenseStore.store(license, token: token, productId: requestedProductId, current: true, db: db) }
            return try Self.dropStaging(token: token, db: db)
        }
    }

    /// The manifest already staging: its file is still wanted by the token (one that gave up
    /// starts over).
    func keepStaging(fileId: Int64, token: String, now: Date) async throws {
        try await catalog.write { db in
            let verified = try String.fetchOne(db, sql: "SELECT state FROM files WHERE id = ?", arguments: [fileId]) == "verified"
            if !verified {
                try db.execute(sql: "UPDATE files SET attempts = 0 WHERE id = ?", arguments: [fileId])
            }
            try FileStore.want(fileId: fileId, ownerKind: "product", ownerId: token, verified: verified, db: db, now: now)
        }
    }

    /// A new manifest: in one transaction, a re-offline staged before is dropped, the new file is
    /// staged beside the old one (`FileStore.stageFile`) and queued for the token, and the new
    /// license kept aside. Returns the files to delete after the commit.
    func stage(token: String, manifestHash: String, item: ManifestItem, validity: Validity, license: GrantedLicense?,
               requestedProductId: String, now: Date) async throws -> [(id: Int64, path: String)] {
        try await catalog.write { db -> [(id: Int64, path: String)] in
            let dropped = try Self.dropStaging(token: token, db: db)
            let (fileId, verified) = try FileStore.stageFile(item, db: db, now: now)
            try FileStore.want(fileId: fileId, ownerKind: "product", ownerId: token, verified: verified, db: db, now: now)
            if let license { try LicenseStore.store(license, token: token, productId: requestedProductId, current: false, db: db) }
            let staged = StagedRevision(manifestHash: manifestHash, fileId: fileId, item: item, validity: validity, licenseId: license?.id)
            try db.execute(sql: "UPDATE offlineProducts SET staged = ? WHERE token = ?", arguments: [staged.encoded(), token])
            return dropped
        }
    }

    /// Tokens with a re-offline under way.
    func stagedTokens() async throws -> [String] {
        try await catalog.read { db in
            try String.fetchAll(db, sql: """
                SELECT token FROM offlineProducts WHERE staged IS NOT NULL AND state != 'deleted'
                """)
        }
    }

    /// Whether a re-offline under way waits for this file.
    func stagingWaits(for fileId: Int64) async throws -> Bool {
        try await catalog.read { db in
            try Bool.fetchOne(db, sql: """
                SELECT 1 FROM offlineProducts p JOIN downloads d ON d.ownerKind = 'product' AND d.ownerId = p.token
                WHERE d.fileId = ? AND p.staged IS NOT NULL LIMIT 1
                """, arguments: [fileId]) ?? false
        }
    }

    /// Points the product at its staged file in one transaction once that file is verified: its
    /// media item, manifest hash, validity and license, and the token's requests (only the new
    /// file is wanted now). nil when there is nothing to swap yet.
    func swap(token: String, now: Date) async throws -> Swapped? {
        try await catalog.write { db -> Swapped? in
            guard let row = try Row.fetchOne(db, sql: "SELECT staged, state FROM offlineProducts WHERE token = ?", arguments: [token]),
                  let staged = (row["staged"] as String?).flatMap(StagedRevision.decode),
                  (row["state"] as String) != "deleted",
                  try String.fetchOne(db, sql: "SELECT state FROM files WHERE id = ?", arguments: [staged.fileId]) == "verified"
            else { return nil }
            try FileStore.upsertMediaItem(staged.item, fileId: staged.fileId, db: db)
            try db.execute(sql: """
                UPDATE offlineProducts SET productId = ?, productType = ?, manifestHash = ?, staged = NULL, endedAt = ?
                WHERE token = ?
                """, arguments: [staged.item.id, staged.item.productType, staged.manifestHash, now, token])
            try Self.store(staged.validity, token: token, db: db)
            if let licenseId = staged.licenseId { try LicenseStore.makeCurrent(licenseId, token: token, db: db) }
            // The token now wants only the new file; the old one goes unless a station holds it.
            try db.execute(sql: "DELETE FROM downloads WHERE ownerKind = 'product' AND ownerId = ? AND fileId != ?",
                           arguments: [token, staged.fileId])
            try db.execute(sql: "UPDATE downloads SET state = 'done', updatedAt = ? WHERE ownerKind = 'product' AND ownerId = ?",
                           arguments: [now, token])
            return Swapped(productId: staged.item.id, garbage: try FileStore.collectGarbage(db: db))
        }
    }

    /// The validity a playbackinfo granted, re-validated now.
    private static func store(_ validity: Validity, token: String, db: Database) throws {
        try db.execute(sql: """
            UPDATE offlineProducts SET offlineRevalidateAt = ?, offlineValidUntil = ?, revalidatedAt = ?, revalidationError = NULL
            WHERE token = ?
            """, arguments: [validity.revalidateAt, validity.validUntil, Date(), token])
    }

    /// Forgets `token`'s staged re-offline, if any: its queue row, its license kept aside and its
    /// file unless something else wants it. Returns the files to delete after the commit.
    private static func dropStaging(token: String, db: Database) throws -> [(id: Int64, path: String)] {
        guard let staged = try String.fetchOne(db, sql: "SELECT staged FROM offlineProducts WHERE token = ?", arguments: [token])
            .flatMap(StagedRevision.decode) else { return [] }
        try db.execute(sql: "UPDATE offlineProducts SET staged = NULL WHERE token = ?", arguments: [token])
        let current = try Int64.fetchOne(db, sql: """
            SELECT m.fileId FROM offlineProducts p JOIN mediaItems m ON m.id = p.productId WHERE p.token = ?
            """, arguments: [token])
        if staged.fileId != current {
            try db.execute(sql: "DELETE FROM downloads WHERE ownerKind = 'product' AND ownerId = ? AND fileId = ?",
                           arguments: [token, staged.fileId])
        }
        if let licenseId = staged.licenseId { try LicenseStore.delete(licenseId: licenseId, db: db) }
        return try FileStore.collectGarbage(db: db)
    }
}
