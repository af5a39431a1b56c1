import Catalog
import Foundation
import GRDB
import Logging
import Synchronization
import Wire

/// The download engine asks this before starting each file whether the
/// policy lets it run now: the network verdict (with the per-item `allowCellular` override)
/// and the storage budget (with eviction of heard station tracks when space is short). Files
/// that may not run leave their owners Idle with the reason (`CellularNotAllowed`,
/// `NoNetwork`, `CacheLimit`) and stay queued, so they start by themselves once allowed.
final class PolicyGate: Sendable {
    private struct State {
        var policy: DownloadPolicy
        var network: NetworkState
        /// Files that hit a full disk while writing: not retried before this time, so a disk
        /// that statvfs calls roomy but refuses writes (quota, inodes) is not hammered.
        var spaceRetryAfter: [Int64: Date] = [:]
    }

    private let state: Mutex<State>
    private let catalog: Catalog
    private let files: FileStore
    let budget: StorageBudget
    private let store: MediaStore
    private let events: DownloaderEvents
    private let logger: Logger
    static let spaceRetrySeconds: Double = 5

    init(catalog: Catalog, store: MediaStore, events: DownloaderEvents, logger: Logger,
         policy: DownloadPolicy, network: NetworkState) {
        self.catalog = catalog
        self.store = store
        self.events = events
        self.logger = logger
        files = FileStore(catalog: catalog)
        budget = StorageBudget(files: files, store: store)
        state = Mutex(State(policy: policy, network: network))
    }

    var policy: DownloadPolicy { state.withLock { $0.policy } }
    var network: NetworkState { state.withLock { $0.network } }
    var verdict: NetworkVerdict { state.withLock { $0.policy.verdict(on: $0.network) } }

    func update(policy: DownloadPolicy) { state.withLock { $0.policy = policy } }
    func update(network: NetworkState) { state.withLock { $0.network = network } }

    /// Re-validation and station re-sync (background traffic) follow the global verdict only.
    var allowsBackgroundTraffic: Bool { verdict == .allowed }

    // MARK: Admission (called by DownloadEngine.kick, one round at a time)

    /// The candidates that may start now, at most `slots`, in order. `running` are the files
    /// already downloading: what they will still write is reserved before anything is admitted,
    /// and each admitted file's bytes are reserved before the next is considered.
    func admit(_ candidates: [FileJob], slots: Int, running: [FileJob]) async -> [FileJob] {
        guard slots > 0, !candidates.isEmpty else { return [] }
        var allowed = candidates
        switch verdict {
        case .allowed: break
        case .blocked(let block, let reason):
            await markIdle(candidates.map(\.fileId), block, reason)
            return []
        case .perItem(let block, let reason):
            let overridden = await cellularAllowedFiles(candidates.map(\.fileId))
            allowed = candidates.filter { overridden.contains($0.fileId) }
            await markIdle(candidates.map(\.fileId).filter { !overridden.contains($0) }, block, reason)
        }
        let now = Date()
        let retryAfter = state.withLock { s in
            s.spaceRetryAfter = s.spaceRetryAfter.filter { $0.value > now }
            return s.spaceRetryAfter
        }
        allowed.removeAll { retryAfter[$0.fileId] != nil }
        guard !allowed.isEmpty else { return [] }
        let policy = self.policy
        var room = await budget.room(policy: policy, running: running).room
        let onDisk = await budget.partSizes(allowed)
        var admitted: [FileJob] = []
        var refused: [(FileJob, String)] = []
        let protected = Set(running.map(\.fileId) + candidates.map(\.fileId))
        for job in allowed where admitted.count < slots {
            let need = room.need(size: job.sizeBytes, onDisk: onDisk[job.fileId] ?? 0)
            if need > room.available, await evict(bytes: need - room.available, excluding: protected) {
                room = await budget.room(policy: policy, running: running + admitted).room
            }
            if need <= room.available {
                admitted.append(job)
                room.reserve(need)
            } else {
                refused.append((job, room.shortage(need: need)))
            }
        }
        for (job, reason) in refused { await markIdle([job.fileId], .cacheLimit, reason) }
        return admitted
    }

    /// A transfer stopped by a full disk (ENOSPC): its owners wait with CacheLimit.
    func stoppedForSpace(_ job: FileJob, _ shortage: StorageShortage) async {
        state.withLock { $0.spaceRetryAfter[job.fileId] = Date().addingTimeInterval(Self.spaceRetrySeconds) }
        let onDisk = await store.partSize(job.relative)
        let room = await budget.room(policy: policy, running: []).room
        let reason = shortage.reason + ": " + room.shortage(need: room.need(size: job.sizeBytes, onDisk: onDisk))
        logger.warning("download of \(job.relative) stopped: \(reason)")
        await markIdle([job.fileId], .cacheLimit, reason)
    }

    /// Files among `fileIds` some queued `offline.add` token asked for with `allowCellular: true`.
    func cellularAllowedFiles(_ fileIds: [Int64]) async -> Set<Int64> {
        guard !fileIds.isEmpty else { return [] }
        return (try? await catalog.read { db in
            try Int64.fetchSet(db, sql: """
                SELECT DISTINCT d.fileId FROM downloads d JOIN offlineProducts p ON d.ownerKind = 'product' AND p.token = d.ownerId
                WHERE d.state = 'queued' AND p.allowCellular = 1 AND d.fileId IN (\(fileIds.map(String.init).joined(separator: ",")))
                """)
        }) ?? []
    }

    // MARK: Item states

    /// The products waiting for these files become Idle with `block` and `reason`, and the
    /// files themselves carry it (what a station's items show); an event for each product or
    /// station item whose state or error changed (a new reason alone is not news).
    func markIdle(_ fileIds: [Int64], _ block: PolicyBlock, _ reason: String) async {
        guard !fileIds.isEmpty else { return }
        let list = fileIds.map(String.init).joined(separator: ",")
        let (products, stationItems) = (try? await catalog.write { db -> ([(String, String)], [(String, String)]) in
            let rows = try Row.fetchAll(db, sql: """
                SELECT DISTINCT p.token, p.productId, p.state, p.error FROM offlineProducts p JOIN downloads d
                  ON d.ownerKind = 'product' AND d.ownerId = p.token AND d.state = 'queued'
                WHERE d.fileId IN (\(list)) AND p.state IN ('queued', 'downloading', 'idle')
                """)
            var products: [(String, String)] = []
            for row in rows {
                let token: String = row["token"]
                try db.execute(sql: "UPDATE offlineProducts SET state = 'idle', error = ?, reason = ? WHERE token = ?",
                               arguments: [block.rawValue, reason, token])
                if (row["state"] as String) != "idle" || (row["error"] as String?) != block.rawValue {
                    products.append((token, row["productId"] ?? ""))
                }
            }
            let items = try Row.fetchAll(db, sql: """
                SELECT DISTINCT si.stationId, si.itemId FROM stationItems si JOIN mediaItems m ON m.id = si.itemId
                  JOIN files f ON f.id = m.fileId
                WHERE f.id IN (\(list)) AND f.state != 'verified' AND f.error IS NOT ?
                """, arguments: [block.rawValue]).map { (row: Row) -> (String, String) in (row["stationId"], row["itemId"]) }
            try db.execute(sql: "UPDATE files SET error = ?, reason = ? WHERE id IN (\(list)) AND state != 'verified'",
                           arguments: [block.rawValue, reason])
            return (products, items)
        }) ?? ([], [])
        for (token, productId) in products {
            events.downloads("ItemStateChanged", ["token": .string(token), "productId": .string(productId), "state": "idle",
                                                  "error": .string(block.rawValue), "reason": .string(reason)])
        }
        for (stationId, itemId) in stationItems {
            events.downloads("ItemStateChanged", ["stationId": .string(stationId), "itemId": .string(itemId), "state": "idle",
                                                  "error": .string(block.rawValue), "reason": .string(reason)])
        }
    }

    /// Items Idle for a network reason that the current verdict allows go back to Queued.
    func releaseNetworkIdle() async {
        let verdict = self.verdict
        if case .blocked = verdict { return }
        let onlyOverridden: Bool
        if case .perItem = verdict { onlyOverridden = true } else { onlyOverridden = false }
        let released = (try? await catalog.write { db -> [(String, String)] in
            if !onlyOverridden {
                try db.execute(sql: """
                    UPDATE files SET error = NULL, reason = NULL WHERE state != 'verified' AND error IN ('CellularNotAllowed', 'NoNetwork')
                    """)
            }
            let rows = try Row.fetchAll(db, sql: """
                SELECT token, productId FROM offlineProducts
                WHERE state = 'idle' AND error IN ('CellularNotAllowed', 'NoNetwork') \(onlyOverridden ? "AND allowCellular = 1" : "")
                """)
            for row in rows {
                try db.execute(sql: "UPDATE offlineProducts SET state = 'queued', error = NULL, reason = NULL WHERE token = ?",
                               arguments: [row["token"] as String])
            }
            return rows.map { (row: Row) -> (String, String) in (row["token"], row["productId"] ?? "") }
        }) ?? []
        for (token, productId) in released {
            events.downloads("ItemStateChanged", ["token": .string(token), "productId": .string(productId), "state": "queued"])
        }
    }

    /// Every product still waiting for bytes goes Idle under a verdict that forbids it.
    func idleBlockedQueue() async {
        let verdict = self.verdict
        let (block, reason): (PolicyBlock, String)
        switch verdict {
        case .allowed: return
        case .blocked(let b, let r), .perItem(let b, let r): (block, reason) = (b, r)
        }
        let waiting = (try? await catalog.read { db in
            try Int64.fetchAll(db, sql: """
                SELECT DISTINCT d.fileId FROM downloads d JOIN files f ON f.id = d.fileId
                WHERE d.state = 'queued' AND f.state != 'verified'
                """)
        }) ?? []
        let exempt: Set<Int64>
        if case .perItem = verdict { exempt = await cellularAllowedFiles(waiting) } else { exempt = [] }
        await markIdle(waiting.filter { !exempt.contains($0) }, block, reason)
    }

    // MARK: Eviction

    /// Evicts heard station tracks until `bytes` are freed; true when it freed that much.
    @discardableResult
    func evict(bytes: Int64, excluding: Set<Int64>) async -> Bool {
        guard bytes > 0 else { return true }
        let victims = (try? await files.evict(excluding: excluding) { Eviction.choose(bytes: bytes, from: $0) }) ?? []
        await store.delete(victims.map(\.path))
        for victim in victims {
            logger.info("evicted \(victim.path) (\(victim.sizeBytes) bytes, heard) to make room")
            for station in victim.stations {
                for item in victim.items {
                    events.downloads("ItemEvicted", ["stationId": .string(station), "itemId": .string(item),
                                                     "sizeBytes": .number(Double(victim.sizeBytes))])
                }
            }
        }
        return victims.reduce(0) { $0 + $1.sizeBytes } >= bytes
    }
}
