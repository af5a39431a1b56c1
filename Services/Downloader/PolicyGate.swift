import Foundation
import GRDB
import Logging
import Synchronization
import Wire

/// The download engine asks this, synchronously and before starting each file, whether the
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
    private let catalog: DatabasePool
    let budget: StorageBudget
    private let store: MediaStore
    private let events: DownloaderEvents
    private let logger: Logger
    static let spaceRetrySeconds: Double = 5

    init(catalog: DatabasePool, store: MediaStore, events: DownloaderEvents, logger: Logger,
         policy: DownloadPolicy, network: NetworkState) {
        self.catalog = catalog
        self.store = store
        self.events = events
        self.logger = logger
        budget = StorageBudget(catalog: catalog, store: store)
        state = Mutex(State(policy: policy, network: network))
    }

    var policy: DownloadPolicy { state.withLock { $0.policy } }
    var network: NetworkState { state.withLock { $0.network } }
    var verdict: NetworkVerdict { state.withLock { $0.policy.verdict(on: $0.network) } }

    func update(policy: DownloadPolicy) { state.withLock { $0.policy = policy } }
    func update(network: NetworkState) { state.withLock { $0.network = network } }

    /// Re-validation and station re-sync (background traffic) follow the global verdict only.
    var allowsBackgroundTraffic: Bool { verdict == .allowed }

    // MARK: Admission (called by DownloadEngine.kick)

    /// The candidates that may start now, at most `slots`, in order. `active` are the files
    /// already downloading (their remaining bytes are reserved).
    func admit(_ candidates: [FileJob], slots: Int, active: [Int64]) -> [FileJob] {
        guard slots > 0, !candidates.isEmpty else { return [] }
        var allowed = candidates
        switch verdict {
        case .allowed: break
        case .blocked(let block, let reason):
            markIdle(candidates.map(\.fileId), block, reason)
            return []
        case .perItem(let block, let reason):
            let overridden = cellularAllowedFiles(candidates.map(\.fileId))
            allowed = candidates.filter { overridden.contains($0.fileId) }
            markIdle(candidates.map(\.fileId).filter { !overridden.contains($0) }, block, reason)
        }
        let now = Date()
        let retryAfter = state.withLock { s in
            s.spaceRetryAfter = s.spaceRetryAfter.filter { $0.value > now }
            return s.spaceRetryAfter
        }
        let policy = self.policy
        var reserved = budget.remaining(fileIds: active).values.reduce(0, +)
        var admitted: [FileJob] = []
        let protected = Set(active + candidates.map(\.fileId))
        for job in allowed where admitted.count < slots {
            if retryAfter[job.fileId] != nil { continue }
            var room = budget.room(policy: policy, reserved: reserved)
            let onDisk = (try? store.partPath(job.relative)).flatMap(MediaStore.size) ?? 0
            let need = room.need(size: job.sizeBytes, onDisk: onDisk)
            if need > room.available, evict(bytes: need - room.available, excluding: protected) {
                room = budget.room(policy: policy, reserved: reserved)
            }
            if need <= room.available {
                admitted.append(job)
                reserved += need
            } else {
                markIdle([job.fileId], .cacheLimit, room.shortage(need: need))
            }
        }
        return admitted
    }

    /// A transfer stopped by a full disk (ENOSPC): its owners wait with CacheLimit.
    func stoppedForSpace(_ job: FileJob, _ shortage: StorageShortage) {
        state.withLock { $0.spaceRetryAfter[job.fileId] = Date().addingTimeInterval(Self.spaceRetrySeconds) }
        let onDisk = (try? store.partPath(job.relative)).flatMap(MediaStore.size) ?? 0
        let room = budget.room(policy: policy, reserved: 0)
        let reason = shortage.reason + ": " + room.shortage(need: room.need(size: job.sizeBytes, onDisk: onDisk))
        logger.warning("download of \(job.relative) stopped: \(reason)")
        markIdle([job.fileId], .cacheLimit, reason)
    }

    /// Files among `fileIds` some queued `offline.add` token asked for with `allowCellular: true`.
    func cellularAllowedFiles(_ fileIds: [Int64]) -> Set<Int64> {
        guard !fileIds.isEmpty else { return [] }
        return (try? catalog.read { db in
            try Int64.fetchSet(db, sql: """
                SELECT DISTINCT d.fileId FROM downloads d JOIN offlineProducts p ON d.ownerKind = 'product' AND p.token = d.ownerId
                WHERE d.state = 'queued' AND p.allowCellular = 1 AND d.fileId IN (\(fileIds.map(String.init).joined(separator: ",")))
                """)
        }) ?? []
    }

    // MARK: Item states

    /// The products waiting for these files become Idle with `block` and `reason`; an event
    /// for each one whose state or error changed (a new reason alone is not news).
    func markIdle(_ fileIds: [Int64], _ block: PolicyBlock, _ reason: String) {
        guard !fileIds.isEmpty else { return }
        let changed = (try? catalog.write { db -> [(String, String)] in
            let rows = try Row.fetchAll(db, sql: """
                SELECT DISTINCT p.token, p.productId, p.state, p.error FROM offlineProducts p JOIN downloads d
                  ON d.ownerKind = 'product' AND d.ownerId = p.token AND d.state = 'queued'
                WHERE d.fileId IN (\(fileIds.map(String.init).joined(separator: ","))) AND p.state IN ('queued', 'downloading', 'idle')
                """)
            var changed: [(String, String)] = []
            for row in rows {
                let token: String = row["token"]
                try db.execute(sql: "UPDATE offlineProducts SET state = 'idle', error = ?, reason = ? WHERE token = ?",
                               arguments: [block.rawValue, reason, token])
                if (row["state"] as String) != "idle" || (row["error"] as String?) != block.rawValue {
                    changed.append((token, row["productId"] ?? ""))
                }
            }
            return changed
        }) ?? []
        for (token, productId) in changed {
            events.downloads("ItemStateChanged", ["token": .string(token), "productId": .string(productId), "state": "idle",
                                                  "error": .string(block.rawValue), "reason": .string(reason)])
        }
    }

    /// Items Idle for a network reason that the current verdict allows go back to Queued.
    func releaseNetworkIdle() {
        let verdict = self.verdict
        if case .blocked = verdict { return }
        let onlyOverridden: Bool
        if case .perItem = verdict { onlyOverridden = true } else { onlyOverridden = false }
        let released = (try? catalog.write { db -> [(String, String)] in
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
    func idleBlockedQueue() {
        let verdict = self.verdict
        let (block, reason): (PolicyBlock, String)
        switch verdict {
        case .allowed: return
        case .blocked(let b, let r), .perItem(let b, let r): (block, reason) = (b, r)
        }
        let waiting = (try? catalog.read { db in
            try Int64.fetchAll(db, sql: """
                SELECT DISTINCT d.fileId FROM downloads d JOIN files f ON f.id = d.fileId
                WHERE d.state = 'queued' AND f.state != 'verified'
                """)
        }) ?? []
        let exempt: Set<Int64>
        if case .perItem = verdict { exempt = cellularAllowedFiles(waiting) } else { exempt = [] }
        markIdle(waiting.filter { !exempt.contains($0) }, block, reason)
    }

    // MARK: Eviction

    /// Evicts heard station tracks until `bytes` are freed; true when it freed that much.
    @discardableResult
    func evict(bytes: Int64, excluding: Set<Int64>) -> Bool {
        guard bytes > 0 else { return true }
        let victims = (try? catalog.write { db in try Eviction.evict(bytes: bytes, db, excluding: excluding) }) ?? []
        for victim in victims {
            store.removeAll(victim.path)
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
