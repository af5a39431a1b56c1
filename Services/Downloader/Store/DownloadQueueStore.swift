import Foundation
import GRDB
import StateDB
import Wire

/// The download queue's SQL: which files to fetch next, which running ones are still wanted, and
/// what a transfer's start and end change for its file and the products waiting for it. The queue
/// is the catalog (`downloads` rows, `files.state`, `files.attempts`, `files.bytesOnDisk`).
struct DownloadQueueStore: Sendable {
    let catalog: StateDB

    /// What verifying one file changed, for the events of its owners (`TransferListener`).
    struct Verified: Sendable {
        /// Products that became `cached` with this file.
        var products: [ProductRef] = []
        /// Partial downloads that became `partiallyCached` with this file.
        var partial: [ProductRef] = []
        /// Stations holding the file (their progress changed).
        var stations: [String] = []
        /// Products listing the file that are not complete yet, with their progress over all
        /// their files (`bytesOnDisk`, `sizeBytes`, `segments`), for `OfflineProgress`.
        var progressed: [(product: ProductRef, fields: [String: JSONValue])] = []
        /// A re-offline waits for this file (a product's staged revision), to be switched to it.
        var staged = false
    }

    /// Files not yet verified that some owner still wants, oldest request first, at most `limit`
    /// (fewer when one file is wanted by several owners); a file without a checksum only when a
    /// product lists it or a staged re-offline does. The walk follows the `downloads_queue`
    /// index in request order and stops at `limit`, so a round costs the same with 10 or 10 000
    /// files wanted. A file whose size no `GET` told yet comes with what the admission counts it
    /// for (`ProductFileStore.admittedSizeSQL`) and `sizeIsEstimate`.
    func next(limit: Int, maxAttempts: Int) async throws -> [FileJob] {
        try await catalog.read { db in
            var seen = Set<Int64>()
            return try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT f.id, f.url, f.localPath, \(ProductFileStore.admittedSizeSQL), f.sha256,
                               EXISTS (SELECT 1 FROM downloads p WHERE p.fileId = f.id AND p.ownerKind = 'product' AND p.state = 'queued')
                                   AS productWaits,
                               (EXISTS (SELECT 1 FROM productFiles pf WHERE pf.fileId = f.id)
                                OR EXISTS (SELECT 1 FROM mediaItems m WHERE m.fileId = f.id AND m.manifestType = 'hls')) AS listed,
                               f.sizeBytes IS NULL AS sizeIsEstimate
                        FROM downloads d INDEXED BY downloads_queue JOIN files f ON f.id = d.fileId
                        WHERE d.state = 'queued' AND f.state IN ('pending', 'partial', 'corrupt') AND f.attempts < ?
                          AND f.url IS NOT NULL
                          AND (f.sha256 IS NOT NULL OR EXISTS (SELECT 1 FROM productFiles pf WHERE pf.fileId = f.id)
                               OR EXISTS (SELECT 1 FROM offlineProducts p, json_each(p.staged, '$.files') s
                                          WHERE p.staged IS NOT NULL AND json_extract(s.value, '$.fileId') = f.id))
                        ORDER BY d.id LIMIT ?
                        """), arguments: [maxAttempts, limit]
            )
            // Columns by position, in the SELECT's order: a lookup by name lowercases and
            // compares every column's name, for each of the rows a round reads.
            .filter { seen.insert($0[0]).inserted }
            .map {
                FileJob(
                    fileId: $0[0], url: $0[1], relative: $0[2], sizeBytes: $0[3], sha256: $0[4],
                    productWaits: $0[5], listed: $0[6], sizeIsEstimate: $0[7])
            }
        }
    }

    /// The files among `fileIds` that some owner still wants (a queued request).
    func wanted(among fileIds: [Int64]) async throws -> Set<Int64> {
        try await catalog.read { db in
            try Int64.fetchSet(db, sql: "SELECT DISTINCT fileId FROM downloads WHERE state = 'queued' AND fileId IN (\(fileIds.sqlList))")
        }
    }

    // MARK: A transfer starts

    /// Whether an `offline.add` token waits for this file. Most files (station items) have none,
    /// and this read spares them the write transaction of `startProducts`.
    func productWaits(for fileId: Int64) async throws -> Bool {
        try await catalog.read { db in
            try Bool.fetchOne(
                db.cachedStatement(sql: "SELECT 1 FROM downloads WHERE fileId = ? AND ownerKind = 'product' AND state = 'queued' LIMIT 1"),
                arguments: [fileId]) ?? false
        }
    }

    /// The products waiting for a file, when every one of them is already downloading or cached
    /// (nil otherwise: `startProducts` has something to write). The files of a presentation after
    /// its first find their product downloading, and this read spares each a write transaction.
    func productsAlreadyStarted(waitingFor fileId: Int64) async throws -> [ProductRef]? {
        try await catalog.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT p.token, p.productId, p.state FROM offlineProducts p JOIN downloads d
                      ON d.ownerKind = 'product' AND d.ownerId = p.token AND d.fileId = ? AND d.state = 'queued'
                    """, arguments: [fileId])
            guard rows.allSatisfy({ ["downloading", "cached"].contains($0["state"] as String) }) else { return nil }
            return rows.map { ProductRef(token: $0["token"], productId: $0["productId"] ?? "") }
        }
    }

    /// The products waiting for a file whose transfer starts (`waiting`), and those of them that
    /// became `downloading` now (`started`). A cached product fetching a re-offline's file stays
    /// cached (and playable) until the swap; its OfflineStarted came from the re-validation.
    /// With `keepOriginWaits` (a transfer only starting, no byte yet), a product `idle` for a
    /// failing origin (`PolicyGate.originWaitErrors`) stays so, and `heldForOrigin` says one
    /// did: it becomes `downloading` once bytes arrive, so a probe of a dead origin is no news.
    func startProducts(waitingFor fileId: Int64, now: Date, keepOriginWaits: Bool = false) async throws
        -> (waiting: [ProductRef], started: [ProductRef], heldForOrigin: Bool)
    {
        try await catalog.write { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT p.token, p.productId, p.state, p.error FROM offlineProducts p JOIN downloads d
                      ON d.ownerKind = 'product' AND d.ownerId = p.token AND d.fileId = ? AND d.state = 'queued'
                    """, arguments: [fileId])
            let all = rows.map { ProductRef(token: $0["token"], productId: $0["productId"] ?? "") }
            let waitsForOrigin = { (row: Row) -> Bool in
                row["state"] == "idle" && PolicyGate.originWaitErrors.contains(row["error"] as String? ?? "")
            }
            let held = keepOriginWaits && rows.contains(where: waitsForOrigin)
            let starting = rows.filter { !["downloading", "cached"].contains($0["state"] as String) && !(keepOriginWaits && waitsForOrigin($0)) }
                .map { ProductRef(token: $0["token"], productId: $0["productId"] ?? "") }
            for owner in starting {
                try db.execute(
                    sql: """
                        UPDATE offlineProducts SET state = 'downloading', startedAt = COALESCE(startedAt, ?), error = NULL, reason = NULL
                        WHERE token = ?
                        """, arguments: [now.databaseText, owner.token])
            }
            return (all, starting, held)
        }
    }

    /// A file tried again after its origin failed: it no longer carries that error (the
    /// products waiting for it lose theirs in `startProducts`).
    func clearOriginWait(fileId: Int64) async throws {
        try await catalog.write { db in
            let waits = PolicyGate.originWaitErrors
            try db.execute(
                sql: "UPDATE files SET error = NULL, reason = NULL WHERE id = ? AND error IN (\(waits.map { _ in "?" }.joined(separator: ", ")))",
                arguments: StatementArguments([fileId]) + StatementArguments(waits))
        }
    }

    // MARK: A transfer runs or stops

    /// A product's bytes and size over all its files while its own file `mainFileId` downloads
    /// (`ProductFileStore.statusFields`), with `mainBytes` as what the running transfer holds;
    /// nil for a product of that one file.
    func productTotals(productId: String, mainFileId: Int64, mainBytes: Int64) async throws -> [String: JSONValue]? {
        try await catalog.read { db in
            try ProductFileStore.statusFields(productId: productId, mainFileId: mainFileId, mainBytes: mainBytes, db: db)
        }
    }

    /// How many bytes a running transfer holds (docs/catalog.md: `bytesOnDisk` follows the
    /// download every few seconds, `ProgressTicker`).
    func recordProgress(fileId: Int64, bytesOnDisk: Int64) async throws {
        try await catalog.write { db in
            try db.cachedStatement(
                sql: """
                    UPDATE files SET bytesOnDisk = ?, state = CASE WHEN ? > 0 THEN 'partial' ELSE state END
                    WHERE id = ? AND state != 'verified'
                    """
            ).execute(arguments: [bytesOnDisk, bytesOnDisk, fileId])
        }
    }

    /// A transfer that stopped before the end: the file keeps what its `.part` holds.
    func recordInterrupted(fileId: Int64, bytesOnDisk: Int64) async throws {
        try await catalog.write { db in
            try db.execute(
                sql: """
                    UPDATE files SET bytesOnDisk = ?, state = CASE WHEN ? > 0 THEN 'partial' ELSE 'pending' END
                    WHERE id = ? AND state != 'verified'
                    """, arguments: [bytesOnDisk, bytesOnDisk, fileId])
        }
    }

    /// What one failed attempt changed, for the events of the file's owners.
    struct FailedAttempt: Sendable {
        var error: String
        var reason: String
        /// The attempts counted so far, of `maxAttempts`.
        var attempts: Int
        var maxAttempts: Int
        /// Products that failed for good with this attempt.
        var products: [ProductRef] = []
        /// Station items that failed for good with this attempt.
        var items: [(stationId: String, itemId: String)] = []
        /// Stations holding the file (their progress changed).
        var stations: [String] = []
        var isFinal: Bool { attempts >= maxAttempts }
    }

    /// A failed attempt: the file starts over and counts it. At `maxAttempts` its requests and
    /// the products waiting for it fail (`failed`), and so do the station items that wanted it
    /// (`failedItems`); `stations` hold the file (their progress changed).
    func recordFailedAttempt(fileId: Int64, error: String, reason: String, maxAttempts: Int, now: Date) async throws -> FailedAttempt {
        try await catalog.write { db -> FailedAttempt in
            try db.execute(
                sql: """
                    UPDATE files SET attempts = attempts + 1, error = ?, reason = ?, state = 'corrupt', bytesOnDisk = 0 WHERE id = ?
                    """, arguments: [error, reason, fileId])
            let attempts = try Int.fetchOne(db, sql: "SELECT attempts FROM files WHERE id = ?", arguments: [fileId]) ?? 0
            let stations = try String.fetchAll(
                db,
                sql: """
                    SELECT DISTINCT si.stationId FROM stationItems si JOIN mediaItems m ON m.id = si.itemId WHERE m.fileId = ?
                    """, arguments: [fileId])
            guard attempts >= maxAttempts else {
                return FailedAttempt(error: error, reason: reason, attempts: attempts, maxAttempts: maxAttempts, stations: stations)
            }
            let failedItems = try Row.fetchAll(
                db,
                sql: """
                    SELECT DISTINCT si.stationId, si.itemId FROM stationItems si JOIN mediaItems m ON m.id = si.itemId
                    JOIN downloads d ON d.ownerKind = 'station' AND d.ownerId = si.stationId AND d.fileId = m.fileId AND d.state = 'queued'
                    WHERE m.fileId = ?
                    """, arguments: [fileId]
            ).map { (stationId: $0["stationId"] as String, itemId: $0["itemId"] as String) }
            try db.execute(
                sql: "UPDATE downloads SET state = 'failed', reason = ?, attempts = ?, updatedAt = ? WHERE fileId = ? AND state = 'queued'",
                arguments: ["\(error): \(reason)", attempts, now.databaseText, fileId])
            let products = try Row.fetchAll(
                db,
                sql: """
                    SELECT p.token, p.productId FROM offlineProducts p JOIN mediaItems m ON m.id = p.productId
                    WHERE \(ProductFileStore.holdsFileSQL) AND p.state IN ('queued', 'downloading', 'idle', 'discovered')
                    """, arguments: [fileId, fileId]
            ).map { ProductRef(token: $0["token"], productId: $0["productId"]) }
            var failed: [ProductRef] = []
            for var product in products {
                // A file of a presentation is named, so a player's silent gap becomes a reason a person can read.
                let name = try ProductFileStore.name(of: fileId, productId: product.productId, db: db)
                let why = name.map { "\($0): \(error): \(reason)" } ?? "\(error): \(reason)"
                try db.execute(
                    sql: "UPDATE offlineProducts SET state = 'failed', error = ?, reason = ?, endedAt = ? WHERE token = ?",
                    arguments: [ItemError.downloadFailed.rawValue, why, now.databaseText, product.token])
                // The product's other files stop too: it failed as a whole (offline.resume starts it again).
                try db.execute(
                    sql: "UPDATE downloads SET state = 'failed', reason = ?, updatedAt = ? WHERE ownerKind = 'product' AND ownerId = ? AND state = 'queued'",
                    arguments: [why, now.databaseText, product.token])
                product.reason = why
                failed.append(product)
            }
            return FailedAttempt(
                error: error, reason: reason, attempts: attempts, maxAttempts: maxAttempts, products: failed,
                items: failedItems, stations: stations)
        }
    }

    // MARK: A transfer is committed

    /// The files are verified, their requests done and the products waiting for them cached;
    /// inside the committer's one transaction for the whole batch (`DurableCommitter`, on a
    /// thread of its own). `sizes`: each file's length as verified, which a file whose size
    /// was unknown (`files.sizeBytes` null) keeps from now on.
    static func markVerified(_ fileIds: [Int64], sizes: [Int64: Int64], now: Date, db: Database) throws -> [Int64: Verified] {
        var verified: [Int64: Verified] = [:]
        var unfinished: [String: (ProductRef, Int64?, Int64)] = [:]
        var unfinishedOrder: [String] = []
        // The date as the catalog stores it, formatted once for the batch rather than twice per file.
        let stamp = now.databaseText
        // Whether any product could still change with these files, asked once per batch: a
        // station's files have none waiting, and the three product queries per file found
        // nothing. Verifying only moves products out of these states, so the answer holds for
        // the whole batch.
        let productsOpen =
            try Bool.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT EXISTS (SELECT 1 FROM offlineProducts WHERE state IN ('queued', 'downloading', 'idle', 'discovered'))
                        """)) ?? true
        let anyStaged = try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM offlineProducts WHERE staged IS NOT NULL)")) ?? true
        for fileId in fileIds {
            // Cached statements: a batch runs these once per file, compiled once per connection.
            try db.cachedStatement(
                sql: """
                    UPDATE files SET state = 'verified', sizeBytes = COALESCE(sizeBytes, ?), bytesOnDisk = COALESCE(sizeBytes, ?),
                    completedAt = ?, error = NULL, reason = NULL WHERE id = ?
                    """
            ).execute(arguments: [sizes[fileId], sizes[fileId], stamp, fileId])
            try db.cachedStatement(sql: "UPDATE downloads SET state = 'done', updatedAt = ? WHERE fileId = ? AND state IN ('queued', 'failed')")
                .execute(arguments: [stamp, fileId])
            let stations = try String.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT DISTINCT si.stationId FROM stationItems si JOIN mediaItems m ON m.id = si.itemId WHERE m.fileId = ?
                        """), arguments: [fileId])
            guard productsOpen || anyStaged else {
                verified[fileId] = Verified(stations: stations)
                continue
            }
            // A product is cached once its last file is: a presentation's segments come one by one.
            // A partial download (prepositioning) is partiallyCached once every file it asked for is.
            let done =
                !productsOpen
                ? []
                : try Row.fetchAll(
                    db.cachedStatement(
                        sql: """
                            SELECT p.token, p.productId, (\(ProductFileStore.allVerifiedSQL)) AS whole FROM offlineProducts p
                            JOIN mediaItems m ON m.id = p.productId
                            WHERE \(ProductFileStore.holdsFileSQL) AND p.state IN ('queued', 'downloading', 'idle', 'discovered')
                              AND ((\(ProductFileStore.allVerifiedSQL)) OR (\(ProductFileStore.partialDoneSQL)))
                            """), arguments: [fileId, fileId]
                ).map { (ProductRef(token: $0["token"], productId: $0["productId"]), $0["whole"] as Bool) }
            let products = done.filter(\.1).map(\.0)
            let partial = done.filter { !$0.1 }.map(\.0)
            for (product, whole) in done {
                let state = whole ? "cached" : "partiallyCached"
                try db.cachedStatement(
                    sql: """
                        UPDATE offlineProducts SET state = ?, endedAt = ?, error = NULL, reason = NULL, options = \(ProductStore.optionsOnceCachedSQL)
                        WHERE token = ?
                        """
                ).execute(arguments: [state, stamp, state, product.token])
            }
            for row in !productsOpen
                ? []
                : try Row.fetchAll(
                    db.cachedStatement(
                        sql: """
                            SELECT p.token, p.productId, m.fileId FROM offlineProducts p JOIN mediaItems m ON m.id = p.productId
                            WHERE \(ProductFileStore.holdsFileSQL) AND p.state IN ('queued', 'downloading', 'idle')
                            """), arguments: [fileId, fileId])
            {
                let token: String = row["token"]
                if unfinished[token] == nil { unfinishedOrder.append(token) }
                unfinished[token] = (ProductRef(token: token, productId: row["productId"]), row["fileId"], fileId)
            }
            let staged =
                !anyStaged
                ? false
                : try Bool.fetchOne(
                    db.cachedStatement(
                        sql: """
                            SELECT 1 FROM offlineProducts p JOIN downloads d ON d.ownerKind = 'product' AND d.ownerId = p.token
                            WHERE d.fileId = ? AND p.staged IS NOT NULL LIMIT 1
                            """), arguments: [fileId]) ?? false
            verified[fileId] = Verified(products: products, partial: partial, stations: stations, staged: staged)
        }
        // The progress of a product still downloading (over all its files: an HLS presentation's,
        // or a progressive product's file and images) once per batch, on the batch's last file of
        // it: counting its files for each of them would make n segments cost n² row reads.
        for token in unfinishedOrder {
            guard let (product, mainFileId, lastFileId) = unfinished[token],
                let fields = try ProductFileStore.statusFields(productId: product.productId, mainFileId: mainFileId, db: db)
            else { continue }
            verified[lastFileId]?.progressed.append((product, fields))
        }
        return verified
    }
}
