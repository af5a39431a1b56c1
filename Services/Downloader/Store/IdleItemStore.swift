import Foundation
import GRDB
import StateDB

/// The items the network and storage policy holds back: products and station items left Idle
/// with the reason (a `PolicyBlock`, on `offlineProducts` and
/// `files`) while their files stay queued, and which queued files the per-item exceptions
/// (`offlineProducts.allowCellular` for the network, `.downloadNow` for the download windows)
/// let through.
struct IdleItemStore: Sendable {
    let catalog: StateDB

    /// A station's item whose idle state or reason changed.
    struct StationItem: Sendable {
        var stationId: String
        var itemId: String
    }

    /// Files among `fileIds` some queued `offline.add` token asked for with `allowCellular: true`.
    func cellularAllowed(among fileIds: [Int64]) async throws -> Set<Int64> {
        try await catalog.read { db in
            try Int64.fetchSet(
                db,
                sql: """
                    SELECT DISTINCT d.fileId FROM downloads d JOIN offlineProducts p ON d.ownerKind = 'product' AND p.token = d.ownerId
                    WHERE d.state = 'queued' AND p.allowCellular = 1 AND d.fileId IN (\(fileIds.sqlList))
                    """)
        }
    }

    /// Files among `fileIds` some queued `offline.add` token asked for with `now: true`.
    func downloadNow(among fileIds: [Int64]) async throws -> Set<Int64> {
        try await catalog.read { db in
            try Int64.fetchSet(
                db,
                sql: """
                    SELECT DISTINCT d.fileId FROM downloads d JOIN offlineProducts p ON d.ownerKind = 'product' AND p.token = d.ownerId
                    WHERE d.state = 'queued' AND p.downloadNow = 1 AND d.fileId IN (\(fileIds.sqlList))
                    """)
        }
    }

    /// Files not yet verified that some owner still waits for.
    func waitingFiles() async throws -> [Int64] {
        try await catalog.read { db in
            try Int64.fetchAll(
                db,
                sql: """
                    SELECT DISTINCT d.fileId FROM downloads d JOIN files f ON f.id = d.fileId
                    WHERE d.state = 'queued' AND f.state != 'verified'
                    """)
        }
    }

    /// The products waiting for these files become Idle with `block` and `reason`, and the files
    /// carry it (what a station's items show), in one transaction. Returns the products and
    /// station items whose state or error changed (a new reason alone is not news). Rows that
    /// already say so are not written again: admission asks every second while items wait (a
    /// closed download window may hold them all day), and a write that changes nothing would
    /// still cost the flash a WAL frame.
    func markIdle(
        _ fileIds: [Int64], _ error: String,
        _ reason: String
    ) async throws -> (products: [ProductRef], stationItems: [StationItem]) {
        let list = fileIds.sqlList
        return try await catalog.write { db -> ([ProductRef], [StationItem]) in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT DISTINCT p.token, p.productId, p.state, p.error, p.reason FROM offlineProducts p JOIN downloads d
                      ON d.ownerKind = 'product' AND d.ownerId = p.token AND d.state = 'queued'
                    WHERE d.fileId IN (\(list)) AND p.state IN ('queued', 'downloading', 'idle')
                    """)
            var products: [ProductRef] = []
            for row in rows {
                let token: String = row["token"]
                let news = (row["state"] as String) != "idle" || (row["error"] as String?) != error
                guard news || (row["reason"] as String?) != reason else { continue }
                try db.execute(
                    sql: "UPDATE offlineProducts SET state = 'idle', error = ?, reason = ? WHERE token = ?",
                    arguments: [error, reason, token])
                if news {
                    products.append(ProductRef(token: token, productId: row["productId"] ?? ""))
                }
            }
            let items = try Row.fetchAll(
                db,
                sql: """
                    SELECT DISTINCT si.stationId, si.itemId FROM stationItems si JOIN mediaItems m ON m.id = si.itemId
                      JOIN files f ON f.id = m.fileId
                    WHERE f.id IN (\(list)) AND f.state != 'verified' AND f.error IS NOT ?
                    """, arguments: [error]
            ).map { StationItem(stationId: $0["stationId"], itemId: $0["itemId"]) }
            try db.execute(
                sql: """
                    UPDATE files SET error = ?, reason = ? WHERE id IN (\(list)) AND state != 'verified'
                      AND (error IS NOT ? OR reason IS NOT ?)
                    """, arguments: [error, reason, error, reason])
            return (products, items)
        }
    }

    /// Items Idle for a network reason go back to Queued, in one transaction: every one, or with
    /// `onlyOverridden` only the products asked for with `allowCellular: true` (the files keep
    /// their reason then). Returns the products released.
    func releaseNetworkIdle(onlyOverridden: Bool) async throws -> [ProductRef] {
        try await release(errors: PolicyBlock.policyNetwork.map(\.rawValue), onlyOverridden: onlyOverridden)
    }

    /// A download window opened: every item that waited for one goes back to Queued.
    func releaseWindowIdle() async throws -> [ProductRef] {
        try await release(errors: [PolicyBlock.outsideDownloadWindow.rawValue], onlyOverridden: false)
    }

    /// At start: items left waiting on a failing origin (`NetworkError`, `Unauthorized`) by the
    /// last run go back to Queued, since nothing says the origin still fails; they are tried
    /// at once and wait again if it does.
    func releaseOriginWaits() async throws -> [ProductRef] {
        try await release(errors: PolicyGate.originWaitErrors, onlyOverridden: false)
    }

    private func release(errors: [String], onlyOverridden: Bool) async throws -> [ProductRef] {
        let placeholders = errors.map { _ in "?" }.joined(separator: ", ")
        return try await catalog.write { db -> [ProductRef] in
            if !onlyOverridden {
                try db.execute(
                    sql: """
                        UPDATE files SET error = NULL, reason = NULL WHERE state != 'verified' AND error IN (\(placeholders))
                        """, arguments: StatementArguments(errors))
            }
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT token, productId FROM offlineProducts
                    WHERE state = 'idle' AND error IN (\(placeholders)) \(onlyOverridden ? "AND allowCellular = 1" : "")
                    """, arguments: StatementArguments(errors))
            for row in rows {
                try db.execute(
                    sql: "UPDATE offlineProducts SET state = 'queued', error = NULL, reason = NULL WHERE token = ?",
                    arguments: [row["token"] as String])
            }
            return rows.map { ProductRef(token: $0["token"], productId: $0["productId"] ?? "") }
        }
    }
}
