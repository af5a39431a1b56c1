import Foundation
import GRDB
import StateDB

/// The catalog's `offlineProducts` rows as `offline.add` and the calls on its token change them
/// (TIDAL OE / Brightcove media products): a token is a row, so it, the product's state and its
/// attempts survive restarts. A request's file and its license are written in the same
/// transaction as the row, so nothing outlives a request that failed.
struct ProductStore: Sendable {
    let catalog: StateDB

    /// The newest request for a product that is not deleted.
    struct OpenRequest: Sendable {
        var token: String
        var state: String
        var licenseId: String?
        /// The limit of a partial (prepositioned) download, nil for a whole one.
        var prepositionSeconds: Double?
    }

    /// A request's product as the token calls check it.
    struct Current: Sendable {
        var state: String
        /// The actual product id, or the requested one before the origin named it.
        var productId: String
    }

    /// What `offline.renewLicense` asks the origin again for: the requested product and quality.
    struct Renewable: Sendable {
        var requestedProductId: String
        var quality: String?
        var state: String
    }

    /// An `offline.add` whose playbackinfo passed the checks, as one transaction stores it.
    struct NewRequest: Sendable {
        var token: String
        var requestedProductId: String
        /// The actual product id (the origin may answer for another than the one requested).
        var productId: String
        var item: ManifestItem
        var quality: String?
        var manifestHash: String?
        var validity: Validity
        var allowCellular: Bool
        /// `offline.add {"now":true}`: downloads outside the download windows too.
        var downloadNow = false
        /// A license granted before the download (Brightcove), stored with the request.
        var license: GrantedLicense?
        /// The product's other files (HLS playlists and segments, images), `productFiles`.
        var files: [PlannedFile] = []
        /// `offlineProducts.options` (JSON): the HLS variant and languages chosen.
        var options: String?
        /// Keys the playlists need that a license held before this request lacked.
        var extraKeys: (licenseId: String, keys: [String: [UInt8]])?
        /// Asked for by the downloader itself (catalog prepositioning), not by a client.
        var automatic = false
        /// Partial prepositioning: only the files `PlannedFile.isWanted(within:)` keeps are
        /// queued; the limit is kept in `options` as `prepositionSeconds`.
        var wantedSeconds: Double?
    }

    /// SQL expression on an `offlineProducts` row: the limit of a partial download, NULL for a
    /// whole one.
    static let prepositionSecondsSQL = "json_extract(options, '$.prepositionSeconds')"

    func openRequest(productId: String) async throws -> OpenRequest? {
        try await catalog.read { db in
            try Row.fetchOne(
                db,
                sql: """
                    SELECT token, state, licenseId, \(Self.prepositionSecondsSQL) AS prepositionSeconds FROM offlineProducts
                    WHERE requestedProductId = ? AND state != 'deleted' ORDER BY requestedAt DESC LIMIT 1
                    """, arguments: [productId]
            ).map {
                OpenRequest(token: $0["token"], state: $0["state"], licenseId: $0["licenseId"], prepositionSeconds: $0["prepositionSeconds"])
            }
        }
    }

    func current(token: String) async throws -> Current? {
        try await catalog.read { db in
            try Row.fetchOne(db, sql: "SELECT state, productId, requestedProductId FROM offlineProducts WHERE token = ?", arguments: [token])
                .map { Current(state: $0["state"], productId: ($0["productId"] as String?) ?? $0["requestedProductId"]) }
        }
    }

    /// Tokens not deleted.
    func activeTokens() async throws -> [String] {
        try await catalog.read { db in
            try String.fetchAll(db, sql: "SELECT token FROM offlineProducts WHERE state != 'deleted'")
        }
    }

    // MARK: offline.add and licenses

    /// The per-item cellular override, for a request asked again with it.
    /// A client asked for what the downloader had asked for by itself: it is explicit now.
    func makeExplicit(token: String) async throws {
        try await catalog.write { db in
            try db.execute(sql: "UPDATE offlineProducts SET automatic = 0 WHERE token = ?", arguments: [token])
        }
    }

    func allowCellular(token: String) async throws {
        try await catalog.write { db in
            try db.execute(sql: "UPDATE offlineProducts SET allowCellular = 1 WHERE token = ?", arguments: [token])
        }
    }

    /// The per-item window exception, for a request asked again with `now`: a product waiting
    /// for a window goes back to `queued` in the same transaction (admission lets it through).
    func downloadNow(token: String) async throws {
        try await catalog.write { db in
            try db.execute(sql: "UPDATE offlineProducts SET downloadNow = 1 WHERE token = ?", arguments: [token])
            try db.execute(
                sql: """
                    UPDATE offlineProducts SET state = 'queued', error = NULL, reason = NULL
                    WHERE token = ? AND state = 'idle' AND error = ?
                    """, arguments: [token, PolicyBlock.outsideDownloadWindow.rawValue])
        }
    }

    /// Stores the request in one transaction: its files (started again from scratch if they gave
    /// up) queued for the token, the token's row, and its license. Returns the product's state and
    /// the files whose old bytes the caller deletes after the commit when the origin now promises
    /// other content under their names.
    func add(_ request: NewRequest, now: Date) async throws -> (state: ItemState, stale: [(fileId: Int64, path: String)]) {
        try await catalog.write { db -> (ItemState, [(fileId: Int64, path: String)]) in
            let (fileId, mainVerified, mainStale) = try FileStore.upsert(request.item, db: db, now: now)
            // An explicit request starts a file that gave up again from scratch.
            try db.execute(sql: "UPDATE files SET attempts = 0 WHERE id = ? AND state != 'verified'", arguments: [fileId])
            let (othersVerified, wantedVerified, stale) = try ProductFileStore.attach(
                request.files, productId: request.productId,
                token: request.token, within: request.wantedSeconds,
                db: db, now: now)
            let verified = mainVerified && othersVerified
            let state: ItemState = verified ? .cached : mainVerified && wantedVerified && request.wantedSeconds != nil ? .partiallyCached : .queued
            // Renditions being added that are all on disk already (another token fetched them) need no wait.
            let options = state == .cached ? Self.withoutAdding(request.options) : request.options
            try db.execute(
                sql: """
                    INSERT INTO offlineProducts (token, requestedProductId, productId, productType, quality, state, manifestHash,
                        offlineRevalidateAt, offlineValidUntil, requestedAt, startedAt, endedAt, error, reason, allowCellular, options,
                        automatic, downloadNow)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, NULL, NULL, ?, ?, ?, ?)
                    ON CONFLICT(token) DO UPDATE SET productId = excluded.productId, state = excluded.state,
                        allowCellular = MAX(allowCellular, excluded.allowCellular), quality = excluded.quality,
                        downloadNow = MAX(downloadNow, excluded.downloadNow),
                        manifestHash = excluded.manifestHash, offlineRevalidateAt = excluded.offlineRevalidateAt,
                        offlineValidUntil = excluded.offlineValidUntil, startedAt = NULL, endedAt = excluded.endedAt,
                        error = NULL, reason = NULL, options = excluded.options, automatic = MIN(automatic, excluded.automatic)
                    """,
                arguments: [
                    request.token, request.requestedProductId, request.productId, request.item.productType,
                    request.quality, state.rawValue, request.manifestHash,
                    request.validity.revalidateAt?.databaseText, request.validity.validUntil?.databaseText,
                    now.databaseText, state == .queued ? nil : now.databaseText, request.allowCellular, options, request.automatic,
                    request.downloadNow,
                ])
            try FileStore.want(fileId: fileId, ownerKind: "product", ownerId: request.token, verified: mainVerified, db: db, now: now)
            if let license = request.license {
                try LicenseStore.store(license, token: request.token, productId: request.requestedProductId, current: true, db: db)
            }
            if let extra = request.extraKeys { try ProductFileStore.addKeys(extra.keys, licenseId: extra.licenseId, db: db) }
            return (state, mainStale.map { [(fileId, $0)] + stale } ?? stale)
        }
    }

    /// The key ids held by the token's license in force (none without one).
    func heldKeyIds(token: String) async throws -> (licenseId: String?, keyIds: Set<String>) {
        try await catalog.read { db in
            guard let licenseId = try String.fetchOne(db, sql: "SELECT licenseId FROM offlineProducts WHERE token = ?", arguments: [token]) else {
                return (nil, [])
            }
            return (licenseId, try ProductFileStore.keyIds(licenseId: licenseId, db: db))
        }
    }

    /// A token that holds only a license (Brightcove preload), state `discovered`, in one
    /// transaction with that license.
    func addPreloaded(
        token: String, requestedProductId: String, productType: String, quality: String?,
        license: GrantedLicense, now: Date
    ) async throws {
        try await catalog.write { db in
            try db.execute(
                sql: """
                    INSERT INTO offlineProducts (token, requestedProductId, productId, productType, quality, state, requestedAt)
                    VALUES (?, ?, NULL, ?, ?, 'discovered', ?)
                    """, arguments: [token, requestedProductId, productType, quality, now.databaseText])
            try LicenseStore.store(license, token: token, productId: requestedProductId, current: true, db: db)
        }
    }

    /// The request behind `token` and the terms of its license in force, read together.
    func renewable(token: String) async throws -> (request: Renewable?, terms: LicenseTerms?) {
        try await catalog.read { db in
            (
                try Row.fetchOne(db, sql: "SELECT requestedProductId, quality, state FROM offlineProducts WHERE token = ?", arguments: [token])
                    .map { Renewable(requestedProductId: $0["requestedProductId"], quality: $0["quality"], state: $0["state"]) },
                try LicenseStore.currentTerms(token: token, db: db)
            )
        }
    }

    // MARK: pause / resume / cancel / delete

    /// The token and its queued request stop: `paused`.
    func pause(token: String, now: Date) async throws {
        try await catalog.write { db in
            try db.execute(sql: "UPDATE offlineProducts SET state = 'paused' WHERE token = ?", arguments: [token])
            try db.execute(
                sql: "UPDATE downloads SET state = 'paused', updatedAt = ? WHERE ownerKind = 'product' AND ownerId = ? AND state = 'queued'",
                arguments: [now.databaseText, token])
        }
    }

    /// The token wants its files again (attempts reset): `cached` when all are verified,
    /// `partiallyCached` when a partial download has all it asked for, else `queued`. Returns
    /// the new state.
    func resume(token: String, now: Date) async throws -> ItemState {
        try await catalog.write { db -> ItemState in
            let files = try ProductFileStore.fileIds(token: token, db: db)
            // A partial download wants again only what it asked for (the files it has requests for).
            let partial =
                try Double.fetchOne(
                    db, sql: "SELECT \(Self.prepositionSecondsSQL) FROM offlineProducts WHERE token = ?",
                    arguments: [token]) != nil
            let asked =
                partial
                ? Set(
                    try Int64.fetchAll(
                        db, sql: "SELECT fileId FROM downloads WHERE ownerKind = 'product' AND ownerId = ?",
                        arguments: [token])) : []
            var verified = !files.isEmpty
            var wantedVerified = true
            for id in files {
                let fileVerified = try String.fetchOne(db, sql: "SELECT state FROM files WHERE id = ?", arguments: [id]) == "verified"
                verified = verified && fileVerified
                guard !partial || asked.contains(id) else { continue }
                wantedVerified = wantedVerified && fileVerified
                try db.execute(sql: "UPDATE files SET attempts = 0 WHERE id = ? AND state != 'verified'", arguments: [id])
                try FileStore.want(fileId: id, ownerKind: "product", ownerId: token, verified: fileVerified, db: db, now: now)
            }
            let newState: ItemState = verified ? .cached : partial && wantedVerified ? .partiallyCached : .queued
            try db.execute(
                sql: "UPDATE offlineProducts SET state = ?, error = NULL, reason = NULL, endedAt = ?, options = \(Self.optionsOnceCachedSQL) WHERE token = ?",
                arguments: [newState.rawValue, newState == .queued ? nil : now.databaseText, newState.rawValue, token])
            return newState
        }
    }

    /// The token fails with `Cancelled`, its requests too. Returns its unverified files that no
    /// other owner still wants, whose bytes the caller removes.
    func cancel(token: String, now: Date) async throws -> [(fileId: Int64, path: String)] {
        try await catalog.write { db -> [(fileId: Int64, path: String)] in
            try db.execute(
                sql: """
                    UPDATE offlineProducts SET state = 'failed', error = 'Cancelled', reason = 'cancelled by request', endedAt = ? WHERE token = ?
                    """, arguments: [now.databaseText, token])
            try db.execute(
                sql: "UPDATE downloads SET state = 'failed', reason = 'Cancelled', updatedAt = ? WHERE ownerKind = 'product' AND ownerId = ?",
                arguments: [now.databaseText, token])
            return try Self.unwantedUnverified(db, token: token)
        }
    }

    /// Unverified files of this token that no other owner still wants.
    private static func unwantedUnverified(_ db: Database, token: String) throws -> [(fileId: Int64, path: String)] {
        let ids = try ProductFileStore.fileIds(token: token, db: db)
        guard !ids.isEmpty else { return [] }
        return try Row.fetchAll(
            db,
            sql: """
                SELECT f.id, f.localPath FROM files f
                WHERE f.id IN (\(ids.sqlList)) AND f.state != 'verified'
                  AND NOT EXISTS (SELECT 1 FROM downloads d WHERE d.fileId = f.id AND d.state IN ('queued', 'paused', 'done')
                                  AND NOT (d.ownerKind = 'product' AND d.ownerId = ?))
                """, arguments: [token]
        ).map { ($0["id"], $0["localPath"]) }
    }

    /// The tokens are `deleted` in one transaction: their requests, their licenses and keys,
    /// and a re-offline under way go with the content, and so do the files nothing holds any
    /// more. Returns those files, whose bytes the caller deletes after the commit.
    func delete(tokens: [String], now: Date) async throws -> [(id: Int64, path: String)] {
        try await catalog.write { db -> [(id: Int64, path: String)] in
            for token in tokens {
                try db.execute(sql: "UPDATE offlineProducts SET state = 'deleted', endedAt = ? WHERE token = ?", arguments: [now.databaseText, token])
                try db.execute(sql: "DELETE FROM downloads WHERE ownerKind = 'product' AND ownerId = ?", arguments: [token])
                try LicenseStore.delete(token: token, db: db)
                try db.execute(sql: "UPDATE offlineProducts SET staged = NULL WHERE token = ?", arguments: [token])
            }
            return try FileStore.collectGarbage(db: db)
        }
    }

    // MARK: offline.state

    /// The shared answer (`OfflineAvailability`, the player's too), judged at `now`.
    func offlineState(productId: String, now: Date) async throws -> OfflineAvailability.State {
        try await catalog.read { db in try OfflineAvailability.state(productId: productId, db: db, now: now) }
    }
}
