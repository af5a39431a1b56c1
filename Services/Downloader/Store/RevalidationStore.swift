import Foundation
import GRDB
import StateDB

/// TIDAL re-validation's side of `offlineProducts`: which cached products are due, their
/// refreshed validity (`offlineRevalidateAt`, `offlineValidUntil`, `revalidatedAt`,
/// `revalidationError`), and a re-offline staged beside the old file (`staged`, with its queue
/// row and its license kept aside) until one transaction swaps the product to it.
struct RevalidationStore: Sendable {
    let catalog: StateDB

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
        /// The HLS choice made at `offline.add` (`offlineProducts.options`), made again for a new presentation.
        var options: String?
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
            try Row.fetchAll(
                db,
                sql: """
                    SELECT token, requestedProductId, productId FROM offlineProducts
                    WHERE state = 'cached' AND (offlineRevalidateAt IS NULL OR offlineRevalidateAt <= ?)
                    ORDER BY requestedAt
                    """, arguments: [now.databaseText]
            ).map {
                Due(
                    token: $0["token"], requestedProductId: $0["requestedProductId"],
                    productId: $0["productId"] ?? $0["requestedProductId"])
            }
        }
    }

    func held(token: String) async throws -> Held? {
        try await catalog.read { db in
            try Row.fetchOne(db, sql: "SELECT quality, manifestHash, options, staged FROM offlineProducts WHERE token = ?", arguments: [token])
                .map {
                    Held(
                        quality: $0["quality"], manifestHash: $0["manifestHash"], options: $0["options"],
                        staged: ($0["staged"] as String?).flatMap(StagedRevision.decode))
                }
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
    func refresh(
        token: String, validity: Validity, license: GrantedLicense?,
        requestedProductId: String
    ) async throws -> [(id: Int64, path: String)] {
        try await catalog.write { db -> [(id: Int64, path: String)] in
            try Self.store(validity, token: token, db: db)
            if let license { try LicenseStore.store(license, token: token, productId: requestedProductId, current: true, db: db) }
            return try Self.dropStaging(token: token, db: db)
        }
    }

    /// The manifest already staging: its files are still wanted by the token (one that gave up
    /// starts over).
    func keepStaging(fileIds: [Int64], token: String, now: Date) async throws {
        try await catalog.write { db in
            for fileId in fileIds {
                let verified = try String.fetchOne(db, sql: "SELECT state FROM files WHERE id = ?", arguments: [fileId]) == "verified"
                if !verified {
                    try db.execute(sql: "UPDATE files SET attempts = 0 WHERE id = ?", arguments: [fileId])
                }
                try FileStore.want(fileId: fileId, ownerKind: "product", ownerId: token, verified: verified, db: db, now: now)
            }
        }
    }

    /// A new manifest: in one transaction, a re-offline staged before is dropped, the new file is
    /// staged beside the old one (`FileStore.stageFile`) and queued for the token, and the new
    /// license kept aside. `files`: the product's other files (an HLS presentation's playlists,
    /// segments and init sections, any product's images), already given their staged paths
    /// (`PlannedFile.staged(mark:)`), each queued as a new file (the origin declares no
    /// checksum for segments and images, so none can be taken from the held copy); empty for a
    /// product without any. Returns the files to delete after the commit.
    func stage(
        token: String, manifestHash: String, item: ManifestItem, files: [PlannedFile], validity: Validity,
        license: GrantedLicense?, requestedProductId: String, now: Date
    ) async throws -> [(id: Int64, path: String)] {
        try await catalog.write { db -> [(id: Int64, path: String)] in
            let dropped = try Self.dropStaging(token: token, db: db)
            let (fileId, verified) = try FileStore.stageFile(item, db: db, now: now)
            try FileStore.want(fileId: fileId, ownerKind: "product", ownerId: token, verified: verified, db: db, now: now)
            let stagedFiles = try files.map { file -> StagedFile in
                let id = try ProductFileStore.insert(file, db: db, now: now)
                try FileStore.want(fileId: id, ownerKind: "product", ownerId: token, verified: false, db: db, now: now)
                return StagedFile(name: file.name, role: file.role, fileId: id)
            }
            if let license { try LicenseStore.store(license, token: token, productId: requestedProductId, current: false, db: db) }
            let staged = StagedRevision(
                manifestHash: manifestHash, fileId: fileId, item: item, validity: validity, licenseId: license?.id,
                files: stagedFiles)
            try db.execute(sql: "UPDATE offlineProducts SET staged = ? WHERE token = ?", arguments: [staged.encoded(), token])
            return dropped
        }
    }

    /// Tokens with a re-offline under way.
    func stagedTokens() async throws -> [String] {
        try await catalog.read { db in
            try String.fetchAll(
                db,
                sql: """
                    SELECT token FROM offlineProducts WHERE staged IS NOT NULL AND state != 'deleted'
                    """)
        }
    }

    /// Whether a re-offline under way waits for this file.
    func stagingWaits(for fileId: Int64) async throws -> Bool {
        try await catalog.read { db in
            try Bool.fetchOne(
                db,
                sql: """
                    SELECT 1 FROM offlineProducts p JOIN downloads d ON d.ownerKind = 'product' AND d.ownerId = p.token
                    WHERE d.fileId = ? AND p.staged IS NOT NULL LIMIT 1
                    """, arguments: [fileId]) ?? false
        }
    }

    /// Points the product at its staged files in one transaction once all are verified: its
    /// media item, its `productFiles`, manifest hash, validity and license, and the token's
    /// requests (only the new files are wanted now). nil when there is nothing to swap yet.
    ///
    /// A revision an earlier version staged for a progressive product (`files` nil) moves the
    /// main file only: the product's `productFiles` stay as they are and still wanted.
    func swap(token: String, now: Date) async throws -> Swapped? {
        try await catalog.write { db -> Swapped? in
            guard let row = try Row.fetchOne(db, sql: "SELECT staged, state, productId FROM offlineProducts WHERE token = ?", arguments: [token]),
                let staged = (row["staged"] as String?).flatMap(StagedRevision.decode),
                (row["state"] as String) != "deleted",
                try Int.fetchOne(
                    db,
                    sql: """
                        SELECT COUNT(*) FROM files WHERE state = 'verified' AND id IN (\(staged.fileIds.sqlList))
                        """) == Set(staged.fileIds).count
            else { return nil }
            let heldProductId: String? = row["productId"]
            try FileStore.upsertMediaItem(staged.item, fileId: staged.fileId, db: db)
            var wanted = staged.fileIds
            if let files = staged.files {
                // The product's other files are the staged ones from now on.
                try db.execute(sql: "DELETE FROM productFiles WHERE productId = ?", arguments: [staged.item.id])
                for (position, file) in files.enumerated() {
                    try db.execute(
                        sql: "INSERT INTO productFiles (productId, name, fileId, role, position) VALUES (?, ?, ?, ?, ?)",
                        arguments: [staged.item.id, file.name, file.fileId, file.role.rawValue, position])
                }
            } else {
                wanted += try Int64.fetchAll(db, sql: "SELECT fileId FROM productFiles WHERE productId = ?", arguments: [staged.item.id])
            }
            try db.execute(
                sql: """
                    UPDATE offlineProducts SET productId = ?, productType = ?, manifestHash = ?, staged = NULL, endedAt = ?
                    WHERE token = ?
                    """, arguments: [staged.item.id, staged.item.productType, staged.manifestHash, now.databaseText, token])
            if staged.files != nil, let held = heldProductId, held != staged.item.id {
                // The origin now delivers another actual product: the held one's list goes
                // unless another request still holds that product.
                try db.execute(
                    sql: """
                        DELETE FROM productFiles WHERE productId = ?
                          AND NOT EXISTS (SELECT 1 FROM offlineProducts WHERE productId = ? AND state != 'deleted')
                        """, arguments: [held, held])
            }
            try Self.store(staged.validity, token: token, db: db)
            if let licenseId = staged.licenseId { try LicenseStore.makeCurrent(licenseId, token: token, db: db) }
            // The token now wants only the new files; the old ones go unless a station holds them.
            try db.execute(
                sql: "DELETE FROM downloads WHERE ownerKind = 'product' AND ownerId = ? AND fileId NOT IN (\(wanted.sqlList))",
                arguments: [token])
            try db.execute(
                sql: "UPDATE downloads SET state = 'done', updatedAt = ? WHERE ownerKind = 'product' AND ownerId = ?",
                arguments: [now.databaseText, token])
            let garbage = try FileStore.collectGarbage(db: db)
            // The staged files take their plain cache keys back from the files just let go of: a
            // presentation is found by the URLs its playlists name, and `offline.estimate` finds
            // images by theirs. A progressive product's main file keeps the name `stageFile` gave it.
            let renamed = (staged.files ?? []).map(\.fileId) + (staged.item.manifestType == "hls" ? [staged.fileId] : [])
            if !renamed.isEmpty {
                try db.execute(
                    sql: """
                        UPDATE files SET urlPath = substr(urlPath, 1, instr(urlPath, '#') - 1)
                        WHERE id IN (\(renamed.sqlList)) AND instr(urlPath, '#') > 0
                          AND NOT EXISTS (SELECT 1 FROM files other WHERE other.urlPath = substr(files.urlPath, 1, instr(files.urlPath, '#') - 1))
                        """)
            }
            return Swapped(productId: staged.item.id, garbage: garbage)
        }
    }

    /// The validity a playbackinfo granted, re-validated now.
    private static func store(_ validity: Validity, token: String, db: Database) throws {
        try db.execute(
            sql: """
                UPDATE offlineProducts SET offlineRevalidateAt = ?, offlineValidUntil = ?, revalidatedAt = ?, revalidationError = NULL
                WHERE token = ?
                """, arguments: [validity.revalidateAt?.databaseText, validity.validUntil?.databaseText, Date().databaseText, token])
    }

    /// Forgets `token`'s staged re-offline, if any: its queue row, its license kept aside and its
    /// file unless something else wants it. Returns the files to delete after the commit.
    private static func dropStaging(token: String, db: Database) throws -> [(id: Int64, path: String)] {
        guard
            let staged = try String.fetchOne(db, sql: "SELECT staged FROM offlineProducts WHERE token = ?", arguments: [token])
                .flatMap(StagedRevision.decode)
        else { return [] }
        try db.execute(sql: "UPDATE offlineProducts SET staged = NULL WHERE token = ?", arguments: [token])
        let current = try Int64.fetchOne(
            db,
            sql: """
                SELECT m.fileId FROM offlineProducts p JOIN mediaItems m ON m.id = p.productId WHERE p.token = ?
                """, arguments: [token])
        let abandoned = staged.fileIds.filter { $0 != current }
        if !abandoned.isEmpty {
            try db.execute(
                sql: "DELETE FROM downloads WHERE ownerKind = 'product' AND ownerId = ? AND fileId IN (\(abandoned.sqlList))",
                arguments: [token])
        }
        if let licenseId = staged.licenseId { try LicenseStore.delete(licenseId: licenseId, db: db) }
        return try FileStore.collectGarbage(db: db)
    }
}
