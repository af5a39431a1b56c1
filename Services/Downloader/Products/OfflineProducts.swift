import Catalog
import Foundation
import GRDB
import Logging
import OriginClient
import Wire

/// TIDAL OE / Brightcove media products: `offline.add` and the calls on its token. A token is a
/// row of `offlineProducts`, so it, the product's state and its attempts survive restarts.
actor OfflineProducts {
    private let catalog: Catalog
    private let origin: OriginClient?
    private let store: MediaStore
    private let engine: DownloadEngine
    private let events: DownloaderEvents
    private let licenses: LicenseClient?
    private let logger: Logger

    init(catalog: Catalog, origin: OriginClient?, store: MediaStore, engine: DownloadEngine,
         events: DownloaderEvents, licenses: LicenseClient?, logger: Logger) {
        self.catalog = catalog
        self.origin = origin
        self.licenses = licenses
        self.store = store
        self.engine = engine
        self.events = events
        self.logger = logger
    }

    // MARK: offline.add

    /// `terms` asks for a license first (Brightcove: the license exchange comes before the
    /// download); a product whose playbackinfo carries a `licenseSecurityToken` gets a purchase
    /// license when no terms are named and none was preloaded.
    func add(productId: String, productType: String?, quality: String?, allowCellular: Bool = false,
             terms: LicenseTerms? = nil, retry: RetryPolicy = .offlining) async throws -> JSONValue {
        guard let origin, let licenses else { throw DownloaderError.noOrigin() }
        let existing = try await openRequest(productId)
        // The same request twice gets the same token; a failed one is started again (explicit
        // re-request), and one that only holds a preloaded license starts its download now.
        if let existing, !["failed", "discovered"].contains(existing.state) {
            if allowCellular {
                // Asked again with the cellular override: it applies to the existing request.
                let token = existing.token
                try await catalog.write { db in
                    try db.execute(sql: "UPDATE offlineProducts SET allowCellular = 1 WHERE token = ?", arguments: [token])
                }
                await engine.kick()
            }
            return try await status(token: existing.token)
        }
        let info = try await playbackInfo(productId, quality: quality, retry: retry)
        let manifestType = info["manifestType"]?.stringValue ?? "progressive"
        guard manifestType == "progressive" else {
            throw DownloaderError.notSupported("\(productId) is delivered as \(manifestType); only progressive files can be offlined so far.")
        }
        let actual = info["productId"]?.stringValue ?? productId
        guard OriginID.isValid(actual) else {
            throw DownloaderError.hostileManifest("the actual product id \(actual.prefix(140).debugDescription) is not a plain token")
        }
        var parsedItem: ManifestItem
        switch HostileInput.item(id: JSONValue.string(actual), fileFields: info["manifest"], meta: info, origin: origin) {
        case .success(let parsed): parsedItem = parsed
        case .failure(let refusal): throw DownloaderError.hostileManifest(refusal.reason)
        }
        parsedItem.productType = info["productType"]?.stringValue ?? productType ?? "TRACK"
        let token = existing?.token ?? UUID().uuidString.lowercased()
        let item = parsedItem
        var license: GrantedLicense?
        if terms != nil || (LicenseClient.securityToken(info) != nil && existing?.licenseId == nil) {
            license = try await licenses.request(productId: productId, playbackInfo: info, terms: terms ?? .purchase, retry: retry)
        }
        let granted = license
        let now = Date()
        let (state, stale) = try await catalog.write { db -> (ItemState, (Int64, String)?) in
            let (fileId, verified, stale) = try FileStore.upsert(item, db: db, now: now)
            // An explicit request starts a file that gave up again from scratch.
            try db.execute(sql: "UPDATE files SET attempts = 0 WHERE id = ? AND state != 'verified'", arguments: [fileId])
            let state: ItemState = verified ? .cached : .queued
            try db.execute(sql: """
                INSERT INTO offlineProducts (token, requestedProductId, productId, productType, quality, state, manifestHash,
                    offlineRevalidateAt, offlineValidUntil, requestedAt, startedAt, endedAt, error, reason, allowCellular)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, NULL, NULL, ?)
                ON CONFLICT(token) DO UPDATE SET productId = excluded.productId, state = excluded.state,
                    allowCellular = MAX(allowCellular, excluded.allowCellular), quality = excluded.quality,
                    manifestHash = excluded.manifestHash, offlineRevalidateAt = excluded.offlineRevalidateAt,
                    offlineValidUntil = excluded.offlineValidUntil, startedAt = NULL, endedAt = excluded.endedAt,
                    error = NULL, reason = NULL
                """, arguments: [token, productId, actual, item.productType, quality, state.rawValue,
                                 info["manifestHash"]?.stringValue,
                                 info["offlineRevalidateAt"]?.stringValue.flatMap(ServerTimeSample.parseRFC3339),
                                 info["offlineValidUntil"]?.stringValue.flatMap(ServerTimeSample.parseRFC3339),
                                 now, verified ? now : nil, allowCellular])
            try FileStore.want(fileId: fileId, ownerKind: "product", ownerId: token, verified: verified, db: db, now: now)
            if let granted { try LicenseStore.store(granted, token: token, productId: productId, current: true, db: db) }
            return (state, stale.map { (fileId, $0) })
        }
        if let (fileId, path) = stale {
            // The origin now promises other content under this name: the old bytes go.
            await engine.cancelAndWait(fileId: fileId)
            await store.delete(path)
        }
        if let granted { licenseEvent("LicenseAcquired", token: token, productId: productId, granted) }
        events.downloads("ItemStateChanged", ["token": .string(token), "productId": .string(actual), "state": .string(state.rawValue)])
        if state == .cached { events.downloads("OfflineDone", ["token": .string(token), "productId": .string(actual)]) }
        await engine.kick()
        return try await status(token: token)
    }

    /// The newest request for `productId` that is not deleted.
    private func openRequest(_ productId: String) async throws -> (token: String, state: String, licenseId: String?)? {
        try await catalog.read { db in
            try Row.fetchOne(db, sql: """
                SELECT token, state, licenseId FROM offlineProducts WHERE requestedProductId = ? AND state != 'deleted'
                ORDER BY requestedAt DESC LIMIT 1
                """, arguments: [productId]).map { (token: $0["token"], state: $0["state"], licenseId: $0["licenseId"]) }
        }
    }

    /// The offline playbackinfo of `productId`; refuses one that may not be downloaded.
    private func playbackInfo(_ productId: String, quality: String?, retry: RetryPolicy) async throws -> JSONValue {
        guard let origin else { throw DownloaderError.noOrigin() }
        let info = try await origin.get("/v1/playbackinfo/\(productId)", query: ["mode": "offline", "quality": quality ?? "HIGH"],
                                        retry: retry)
        guard info["canBeDownloaded"]?.boolValue == true else { throw DownloaderError.notDownloadable(productId) }
        return info
    }

    // MARK: Licenses (Brightcove)

    /// `offline.preloadLicense`: a license before any content, so a batch of downloads can run
    /// later without a license exchange (Brightcove "Preload a FairPlay license"). It makes the
    /// offline token, state `discovered`, that a later `offline.add` of the product downloads
    /// into. A product already requested gets its license renewed instead.
    func preloadLicense(productId: String, productType: String?, quality: String?, terms: LicenseTerms?,
                        retry: RetryPolicy = .offlining) async throws -> JSONValue {
        guard let licenses else { throw DownloaderError.noOrigin() }
        if let existing = try await openRequest(productId), existing.state != "failed" {
            let token = existing.token
            let held = try await catalog.read { db in try LicenseStore.currentTerms(token: token, db: db) }
            return try await renewLicense(token: token, terms: terms ?? held ?? .purchase, retry: retry)
        }
        let info = try await playbackInfo(productId, quality: quality, retry: retry)
        let license = try await licenses.request(productId: productId, playbackInfo: info, terms: terms ?? .purchase, retry: retry)
        let token = UUID().uuidString.lowercased()
        let type = info["productType"]?.stringValue ?? productType ?? "TRACK"
        try await catalog.write { db in
            try db.execute(sql: """
                INSERT INTO offlineProducts (token, requestedProductId, productId, productType, quality, state, requestedAt)
                VALUES (?, ?, NULL, ?, ?, 'discovered', ?)
                """, arguments: [token, productId, type, quality, Date()])
            try LicenseStore.store(license, token: token, productId: productId, current: true, db: db)
        }
        licenseEvent("LicenseAcquired", token: token, productId: productId, license)
        return try await status(token: token)
    }

    /// `offline.renewLicense`: a new license for content already held, downloading nothing again
    /// (Brightcove "Renewing a FairPlay license"). Without terms, the current license's are reused.
    func renewLicense(token: String, terms: LicenseTerms?, retry: RetryPolicy = .offlining) async throws -> JSONValue {
        guard let licenses else { throw DownloaderError.noOrigin() }
        let (row, held) = try await catalog.read { db in
            (try Row.fetchOne(db, sql: "SELECT requestedProductId, quality, state FROM offlineProducts WHERE token = ?", arguments: [token])
                .map { (productId: $0["requestedProductId"] as String, quality: $0["quality"] as String?, state: $0["state"] as String) },
             try LicenseStore.currentTerms(token: token, db: db))
        }
        guard let row else { throw DownloaderError.unknownToken(token) }
        guard row.state != ItemState.deleted.rawValue else {
            throw DownloaderError.invalidState("\(token) is deleted; offline.add requests it again.")
        }
        guard let terms = terms ?? held else { throw DownloaderError.noLicense(token) }
        let productId = row.productId
        // A fresh playbackinfo, as Brightcove asks for a freshly retrieved video: the security
        // token and key ids may have changed since the content was downloaded.
        let info = try await playbackInfo(productId, quality: row.quality, retry: retry)
        let license = try await licenses.request(productId: productId, playbackInfo: info, terms: terms, retry: retry)
        try await catalog.write { db in
            try LicenseStore.store(license, token: token, productId: productId, current: true, db: db)
        }
        licenseEvent("LicenseRenewed", token: token, productId: productId, license)
        return try await status(token: token)
    }

    private func licenseEvent(_ type: String, token: String, productId: String, _ license: GrantedLicense) {
        events.downloads(type, ["token": .string(token), "productId": .string(productId), "kind": .string(license.terms.kind),
                                "expiresAt": license.expiresAt.map { .string(ServerTimeSample.formatRFC3339($0)) } ?? .null])
    }

    // MARK: Reading

    func status(token: String) async throws -> JSONValue {
        guard let value = try await catalog.read({ db in try Self.statusRows(db, where: "p.token = ?", [token]).first }) else {
            throw DownloaderError.unknownToken(token)
        }
        return value
    }

    func list(state: String?, sort: String?) async throws -> JSONValue {
        let order: String
        switch sort ?? "requestedAt" {
        case "requestedAt": order = "p.requestedAt"
        case "-requestedAt": order = "p.requestedAt DESC"
        case "productId": order = "p.productId"
        case "state": order = "p.state, p.requestedAt"
        default: throw RPCError.invalidParams("params.sort must be requestedAt, -requestedAt, productId or state.")
        }
        if let state, ItemState(rawValue: state) == nil {
            throw RPCError.invalidParams("params.filter must be one of \(ItemState.allCases.map(\.rawValue).joined(separator: ", ")).")
        }
        let items = try await catalog.read { db in
            try Self.statusRows(db, where: state == nil ? "p.state != 'deleted'" : "p.state = ?", state.map { [$0] } ?? [],
                                order: order)
        }
        return ["items": .array(items)]
    }

    private static func statusRows(_ db: Database, where condition: String, _ arguments: [String], order: String = "p.requestedAt") throws -> [JSONValue] {
        try Row.fetchAll(db, sql: """
            SELECT p.*, f.bytesOnDisk, f.sizeBytes, f.state AS fileState FROM offlineProducts p
            LEFT JOIN mediaItems m ON m.id = p.productId LEFT JOIN files f ON f.id = m.fileId
            WHERE \(condition) ORDER BY \(order)
            """, arguments: StatementArguments(arguments)).map { row in
            let state: String = row["state"]
            let size: Int64? = row["sizeBytes"]
            var bytes: Int64 = row["bytesOnDisk"] ?? 0
            if state == "deleted" { bytes = 0 }
            let progress = state == "cached" ? 100 : (size.map { $0 > 0 ? Double(bytes * 100 / $0) : 0 } ?? 0)
            func date(_ key: String) -> JSONValue { (row[key] as Date?).map(ServerTimeSample.formatRFC3339).map(JSONValue.string) ?? .null }
            var fields: [String: JSONValue] = [
                "token": .string(row["token"]), "requestedProductId": .string(row["requestedProductId"]),
                "productId": (row["productId"] as String?).map(JSONValue.string) ?? .null,
                "productType": .string(row["productType"]), "state": .string(state), "progress": .number(progress),
                "bytesOnDisk": .number(Double(bytes)), "sizeBytes": size.map { .number(Double($0)) } ?? .null,
                "requestedAt": date("requestedAt"), "startedAt": date("startedAt"), "endedAt": date("endedAt"),
                "offlineValidUntil": date("offlineValidUntil"),
                "error": (row["error"] as String?).map(JSONValue.string) ?? .null,
                "reason": (row["reason"] as String?).map(JSONValue.string) ?? .null,
                "quality": (row["quality"] as String?).map(JSONValue.string) ?? .null,
                "allowCellular": .bool(row["allowCellular"] as Bool? ?? false),
                "manifestHash": (row["manifestHash"] as String?).map(JSONValue.string) ?? .null,
                "offlineRevalidateAt": date("offlineRevalidateAt"), "revalidatedAt": date("revalidatedAt"),
                "revalidationError": (row["revalidationError"] as String?).map(JSONValue.string) ?? .null,
            ]
            // Brightcove: request time and expiry of the license; absent when there is none.
            if let license = try LicenseStore.statusJSON(licenseId: row["licenseId"], db: db) { fields["license"] = license }
            if let staged = (row["staged"] as String?).flatMap(StagedRevision.decode) {
                let file = try Row.fetchOne(db, sql: "SELECT state, bytesOnDisk FROM files WHERE id = ?", arguments: [staged.fileId])
                fields["staged"] = ["productId": .string(staged.item.id), "manifestHash": .string(staged.manifestHash),
                                    "sizeBytes": .number(Double(staged.item.sizeBytes)),
                                    "bytesOnDisk": .number(Double(file?["bytesOnDisk"] as Int64? ?? 0)),
                                    "fileState": (file?["state"] as String?).map(JSONValue.string) ?? .null]
            }
            return .object(fields)
        }
    }

    // MARK: pause / resume / cancel / delete

    func pause(token: String) async throws -> JSONValue {
        let (state, productId) = try await current(token)
        if state == .paused { return try await status(token: token) }
        guard state.wantsBytes || state == .discovered else {
            throw DownloaderError.invalidState("\(token) is \(state.rawValue); only a queued or downloading item can be paused.")
        }
        try await catalog.write { db in
            try db.execute(sql: "UPDATE offlineProducts SET state = 'paused' WHERE token = ?", arguments: [token])
            try db.execute(sql: "UPDATE downloads SET state = 'paused', updatedAt = ? WHERE ownerKind = 'product' AND ownerId = ? AND state = 'queued'",
                           arguments: [Date(), token])
        }
        await engine.dropUnwanted()
        events.downloads("ItemStateChanged", ["token": .string(token), "productId": .string(productId), "state": "paused"])
        return try await status(token: token)
    }

    func resume(token: String) async throws -> JSONValue {
        let (state, productId) = try await current(token)
        guard state == .paused || state == .failed else {
            if state.wantsBytes || state == .cached { return try await status(token: token) }
            throw DownloaderError.invalidState("\(token) is \(state.rawValue); offline.add requests it again.")
        }
        let now = Date()
        let newState = try await catalog.write { db -> ItemState in
            let file = try Row.fetchOne(db, sql: """
                SELECT f.id, f.state FROM mediaItems m JOIN files f ON f.id = m.fileId JOIN offlineProducts p ON p.productId = m.id
                WHERE p.token = ?
                """, arguments: [token])
            let verified = (file?["state"] as String?) == "verified"
            if let id = file?["id"] as Int64? {
                try db.execute(sql: "UPDATE files SET attempts = 0 WHERE id = ? AND state != 'verified'", arguments: [id])
                try FileStore.want(fileId: id, ownerKind: "product", ownerId: token, verified: verified, db: db, now: now)
            }
            let newState: ItemState = verified ? .cached : .queued
            try db.execute(sql: "UPDATE offlineProducts SET state = ?, error = NULL, reason = NULL, endedAt = ? WHERE token = ?",
                           arguments: [newState.rawValue, verified ? now : nil, token])
            return newState
        }
        events.downloads("ItemStateChanged", ["token": .string(token), "productId": .string(productId), "state": .string(newState.rawValue)])
        await engine.kick()
        return try await status(token: token)
    }

    /// Stops a download for good: Failed with `Cancelled`; content nobody else wants is removed.
    func cancel(token: String) async throws -> JSONValue {
        let (state, productId) = try await current(token)
        guard state.wantsBytes || state == .paused || state == .discovered else {
            throw DownloaderError.invalidState("\(token) is \(state.rawValue); only an unfinished download can be cancelled (offline.delete removes content).")
        }
        let now = Date()
        let orphaned = try await catalog.write { db -> [(Int64, String)] in
            try db.execute(sql: """
                UPDATE offlineProducts SET state = 'failed', error = 'Cancelled', reason = 'cancelled by request', endedAt = ? WHERE token = ?
                """, arguments: [now, token])
            try db.execute(sql: "UPDATE downloads SET state = 'failed', reason = 'Cancelled', updatedAt = ? WHERE ownerKind = 'product' AND ownerId = ?",
                           arguments: [now, token])
            return try Self.unwantedUnverified(db, token: token)
        }
        await engine.dropUnwanted()
        for (fileId, path) in orphaned {
            await engine.cancelAndWait(fileId: fileId)
            await store.delete(path)
            _ = try? await catalog.write { db in
                try db.execute(sql: "UPDATE files SET state = 'pending', bytesOnDisk = 0 WHERE id = ? AND state != 'verified'", arguments: [fileId])
            }
        }
        events.downloads("OfflineFailed", ["token": .string(token), "productId": .string(productId), "error": "Cancelled",
                                           "reason": "cancelled by request"])
        events.downloads("ItemStateChanged", ["token": .string(token), "productId": .string(productId), "state": "failed",
                                              "error": "Cancelled"])
        return try await status(token: token)
    }

    /// Unverified files of this token that no other owner still wants.
    private static func unwantedUnverified(_ db: Database, token: String) throws -> [(Int64, String)] {
        try Row.fetchAll(db, sql: """
            SELECT f.id, f.localPath FROM offlineProducts p JOIN mediaItems m ON m.id = p.productId JOIN files f ON f.id = m.fileId
            WHERE p.token = ? AND f.state != 'verified'
              AND NOT EXISTS (SELECT 1 FROM downloads d WHERE d.fileId = f.id AND d.state IN ('queued', 'paused', 'done')
                              AND NOT (d.ownerKind = 'product' AND d.ownerId = ?))
            """, arguments: [token, token]).map { ($0["id"], $0["localPath"]) }
    }

    func delete(token: String) async throws -> JSONValue {
        let (_, productId) = try await current(token)
        try await deleteTokens([token])
        events.downloads("OfflineDeleted", ["token": .string(token), "productId": .string(productId)])
        events.downloads("ItemStateChanged", ["token": .string(token), "productId": .string(productId), "state": "deleted"])
        return try await status(token: token)
    }

    func deleteAll() async throws -> JSONValue {
        let tokens = try await catalog.read { db in
            try String.fetchAll(db, sql: "SELECT token FROM offlineProducts WHERE state != 'deleted'")
        }
        try await deleteTokens(tokens)
        events.downloads("AllOfflinesDeleted", ["count": .number(Double(tokens.count))])
        return ["deleted": .number(Double(tokens.count))]
    }

    private func deleteTokens(_ tokens: [String]) async throws {
        guard !tokens.isEmpty else { return }
        let now = Date()
        let garbage = try await catalog.write { db -> [(id: Int64, path: String)] in
            for token in tokens {
                try db.execute(sql: "UPDATE offlineProducts SET state = 'deleted', endedAt = ? WHERE token = ?", arguments: [now, token])
                try db.execute(sql: "DELETE FROM downloads WHERE ownerKind = 'product' AND ownerId = ?", arguments: [token])
                // Its license and keys, and a re-offline under way, go with the content.
                try LicenseStore.delete(token: token, db: db)
                try db.execute(sql: "UPDATE offlineProducts SET staged = NULL WHERE token = ?", arguments: [token])
            }
            return try FileStore.collectGarbage(db: db)
        }
        await engine.discard(garbage)
    }

    private func current(_ token: String) async throws -> (ItemState, String) {
        guard let row = try await catalog.read({ db in
            try Row.fetchOne(db, sql: "SELECT state, productId, requestedProductId FROM offlineProducts WHERE token = ?", arguments: [token])
                .map { (state: $0["state"] as String, productId: ($0["productId"] as String?) ?? $0["requestedProductId"]) }
        }) else { throw DownloaderError.unknownToken(token) }
        return (ItemState(rawValue: row.state) ?? .failed, row.productId)
    }

    // MARK: offline.state

    func offlineState(productId: String, now: Date) async throws -> JSONValue {
        let state = try await catalog.read { db in try OfflineAvailability.state(productId: productId, db: db, now: now) }
        return ["productId": .string(productId), "state": .string(state.rawValue)]
    }
}
