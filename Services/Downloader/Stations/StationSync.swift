import Catalog
import Foundation
import GRDB
import Logging
import OriginClient
import Wire

/// Feed.fm offline stations: `stations.list` and `stations.sync`, and the re-sync of stations
/// already held (at start and every `resyncIntervalSeconds`). One sync at a time, so two
/// callers never apply two manifests of the same station into each other.
actor StationSync {
    private let catalog: Catalog
    private let origin: OriginClient?
    /// Same origin, short timeouts, no network retries: `stations.list` answers at once.
    private let quickOrigin: OriginClient?
    private let store: MediaStore
    private let engine: DownloadEngine
    private let events: DownloaderEvents
    private let logger: Logger
    private var lastAvailability: String?

    init(catalog: Catalog, origin: OriginClient?, quickOrigin: OriginClient?, store: MediaStore,
         engine: DownloadEngine, events: DownloaderEvents, logger: Logger) {
        self.catalog = catalog
        self.origin = origin
        self.quickOrigin = quickOrigin
        self.store = store
        self.engine = engine
        self.events = events
        self.logger = logger
    }

    static let quickPolicy = RetryPolicy(statusRetries: 1, baseDelay: 0.2, maxStatusDelay: 1, networkRetries: 0, maxNetworkDelay: 0)

    // MARK: stations.list

    func list() async throws -> JSONValue {
        let local = try await localOffline()
        var available = false
        var stations: [JSONValue] = []
        var remoteOffline: [JSONValue] = []
        if let quickOrigin {
            do {
                let answer = try await quickOrigin.get("/v1/stations", retry: Self.quickPolicy)
                available = true
                stations = (answer["stations"]?.arrayValue ?? []).filter { OriginID.isValid($0["id"]?.stringValue ?? "") }
                remoteOffline = (answer["offlineStations"]?.arrayValue ?? []).filter { OriginID.isValid($0["id"]?.stringValue ?? "") }
            } catch {
                logger.info("stations.list: origin not available: \(error)")
            }
        }
        let availability = available ? "Available" : (local.isEmpty ? "NotAvailable" : "OfflineOnly")
        if availability != lastAvailability {
            lastAvailability = availability
            events.network(availability, ["localOffline": .number(Double(local.count))])
        }
        return ["available": .bool(available), "stations": .array(stations), "remoteOffline": .array(remoteOffline),
                "localOffline": .array(local)]
    }

    /// Stations with at least one verified item (CATALOG-CONTRACT), from the catalog alone.
    private func localOffline() async throws -> [JSONValue] {
        try await catalog.read { db in
            try Row.fetchAll(db, sql: """
                SELECT s.id, s.name, s.expiresAt, s.onExpiry, s.syncedAt, COUNT(si.itemId) AS itemCount,
                       SUM(CASE WHEN f.state = 'verified' THEN 1 ELSE 0 END) AS verifiedCount,
                       SUM(CASE WHEN f.state = 'verified' THEN COALESCE(m.durationSeconds, 0) ELSE 0 END) AS seconds,
                       SUM(CASE WHEN f.state = 'verified' THEN COALESCE(f.sizeBytes, 0) ELSE 0 END) AS bytes
                FROM stations s JOIN stationItems si ON si.stationId = s.id JOIN mediaItems m ON m.id = si.itemId
                LEFT JOIN files f ON f.id = m.fileId
                GROUP BY s.id HAVING verifiedCount > 0 ORDER BY s.name
                """).map { row -> JSONValue in
                [
                    "id": .string(row["id"]), "name": .string(row["name"]),
                    "itemCount": .number(Double(row["itemCount"] as Int)),
                    "verifiedCount": .number(Double(row["verifiedCount"] as Int)),
                    "durationSeconds": .number(row["seconds"] as Double? ?? 0),
                    "sizeBytes": .number(Double(row["bytes"] as Int64? ?? 0)),
                    "expiresAt": (row["expiresAt"] as Date?).map(ServerTimeSample.formatRFC3339).map(JSONValue.string) ?? .null,
                    "syncedAt": (row["syncedAt"] as Date?).map(ServerTimeSample.formatRFC3339).map(JSONValue.string) ?? .null,
                    "onExpiry": .string(row["onExpiry"]),
                ]
            }
        }
    }

    // MARK: stations.sync

    struct SyncResult: Sendable, Encodable {
        var stationId: String
        var added: [String]
        var removed: [String]
        var refused: [RefusedItem]
        var pending: Int
        var failed: Int
        var total: Int
        var manifestHash: String?
    }

    func sync(stationId: String, targetMinutes: Double?, keepStoredTarget: Bool = false,
              retry: RetryPolicy = .offlining) async throws -> SyncResult {
        guard let origin else { throw DownloaderError.noOrigin() }
        let (have, played, storedTarget) = try await catalog.read { db in
            let have = try String.fetchAll(db, sql: """
                SELECT si.itemId FROM stationItems si JOIN mediaItems m ON m.id = si.itemId JOIN files f ON f.id = m.fileId
                WHERE si.stationId = ? AND f.state = 'verified' ORDER BY si.position
                """, arguments: [stationId])
            let played = try String.fetchAll(db, sql: "SELECT itemId FROM stationItems WHERE stationId = ? AND playedAt IS NOT NULL",
                                             arguments: [stationId])
            let target = try Double.fetchOne(db, sql: "SELECT targetMinutes FROM stations WHERE id = ?", arguments: [stationId])
            return (have, played, target)
        }
        let target = keepStoredTarget ? storedTarget : targetMinutes
        let answer = try await origin.post("/v1/stations/\(stationId)/offline", body: [
            "targetMinutes": target.map(JSONValue.number) ?? .null,
            "have": .array(have.map(JSONValue.string)), "played": .array(played.map(JSONValue.string)),
        ], retry: retry)

        // Hostile or broken manifests: refuse the whole answer when its frame is wrong, single
        // items when only they are.
        if let echoed = answer["station"]?["id"]?.stringValue, echoed != stationId {
            throw DownloaderError.hostileManifest("it describes station \(echoed.prefix(140).debugDescription), not \(stationId)")
        }
        guard let rawItems = answer["items"]?.arrayValue else { throw DownloaderError.hostileManifest("it has no items array") }
        var parsedItems: [ManifestItem] = []
        var refused: [RefusedItem] = []
        for raw in rawItems {
            switch HostileInput.item(id: raw["id"], fileFields: raw, meta: raw, origin: origin) {
            case .success(let item): parsedItems.append(item)
            case .failure(let refusal): refused.append(refusal)
            }
        }
        var removeList: [String] = []
        for raw in answer["remove"]?.arrayValue ?? [] {
            if let id = raw.stringValue, OriginID.isValid(id) { removeList.append(id) } else {
                refused.append(RefusedItem(id: String(describing: raw).prefix(140).description, reason: "remove lists an id that is not a plain token"))
            }
        }
        for refusal in refused {
            logger.warning("station \(stationId): refused item \(refusal.id.debugDescription): \(refusal.reason)")
            events.downloads("ItemRefused", ["stationId": .string(stationId), "itemId": .string(refusal.id), "reason": .string(refusal.reason)])
        }
        let items = parsedItems
        let removeIds = removeList
        let onExpiry = answer["onExpiry"]?.stringValue.flatMap { ["delete", "keep"].contains($0) ? $0 : nil } ?? "delete"
        let name = answer["station"]?["name"]?.stringValue
        let now = Date()
        let (added, stale) = try await catalog.write { db -> ([String], [(Int64, String)]) in
            try db.execute(sql: """
                INSERT INTO stations (id, name, manifestHash, targetMinutes, expiresAt, revalidateAt, onExpiry, syncedAt, createdAt, lastError)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)
                ON CONFLICT(id) DO UPDATE SET name = COALESCE(?, name), manifestHash = excluded.manifestHash,
                    targetMinutes = excluded.targetMinutes, expiresAt = excluded.expiresAt, revalidateAt = excluded.revalidateAt,
                    onExpiry = excluded.onExpiry, syncedAt = excluded.syncedAt, lastError = NULL
                """, arguments: [stationId, name ?? stationId, answer["manifestHash"]?.stringValue, target,
                                 answer["expiresAt"]?.stringValue.flatMap(ServerTimeSample.parseRFC3339),
                                 answer["revalidateAt"]?.stringValue.flatMap(ServerTimeSample.parseRFC3339),
                                 onExpiry, now, now, name])
            var position = try Int.fetchOne(db, sql: "SELECT MAX(position) FROM stationItems WHERE stationId = ?", arguments: [stationId]) ?? -1
            var added: [String] = []
            var stale: [(Int64, String)] = []
            for item in items {
                let (fileId, verified, oldPath) = try FileStore.upsert(item, db: db, now: now)
                if let oldPath { stale.append((fileId, oldPath)) }
                let exists = try Bool.fetchOne(db, sql: "SELECT 1 FROM stationItems WHERE stationId = ? AND itemId = ?",
                                               arguments: [stationId, item.id]) ?? false
                if !exists {
                    position += 1
                    try db.execute(sql: "INSERT INTO stationItems (stationId, itemId, position) VALUES (?, ?, ?)",
                                   arguments: [stationId, item.id, position])
                    added.append(item.id)
                }
                try FileStore.want(fileId: fileId, ownerKind: "station", ownerId: stationId, verified: verified, db: db, now: now)
            }
            for id in removeIds {
                try db.execute(sql: """
                    DELETE FROM downloads WHERE ownerKind = 'station' AND ownerId = ?
                      AND fileId IN (SELECT fileId FROM mediaItems WHERE id = ?)
                    """, arguments: [stationId, id])
                try db.execute(sql: "DELETE FROM stationItems WHERE stationId = ? AND itemId = ?", arguments: [stationId, id])
            }
            let garbage = try FileStore.collectGarbage(db: db)
            return (added, stale + garbage.map { ($0.id, $0.path) })
        }
        // The catalog no longer points at these bytes: stop their transfers, then delete them.
        for (fileId, path) in stale {
            await engine.cancelAndWait(fileId: fileId)
            await store.delete(path)
        }
        await engine.kick()
        let maxAttempts = engine.maxAttempts
        let progress = try await catalog.read { db in try FileStore.stationProgress(stationId, maxAttempts: maxAttempts, db: db) }
        await engine.publishStationProgress([stationId])
        return SyncResult(stationId: stationId, added: added, removed: removeIds, refused: refused, pending: progress.pending,
                          failed: progress.failed, total: progress.total, manifestHash: answer["manifestHash"]?.stringValue)
    }

    func recordFailure(stationId: String, error: Error) async {
        _ = try? await catalog.write { db in
            try db.execute(sql: "UPDATE stations SET lastError = ? WHERE id = ?", arguments: ["\(error)", stationId])
        }
    }

    /// Re-syncs every station already held, asking only for what changed (`have` lists what is on disk).
    func resyncAll() async {
        guard origin != nil else { return }
        let ids = (try? await catalog.read { db in try String.fetchAll(db, sql: "SELECT id FROM stations ORDER BY id") }) ?? []
        for id in ids {
            do {
                _ = try await sync(stationId: id, targetMinutes: nil, keepStoredTarget: true)
            } catch {
                logger.warning("re-sync of station \(id) failed: \(error)")
                await recordFailure(stationId: id, error: error)
            }
        }
    }
}
