import Foundation
import Logging
import OriginClient
import StateDB
import Systemd
import Wire

/// Feed.fm offline stations: `stations.list` and `stations.sync`, and the re-sync of stations
/// already held (at start and every `resyncIntervalSeconds`). One sync at a time, so two
/// callers never apply two manifests of the same station into each other.
actor StationSync {
    private let stations: StationStore
    private let origin: OriginClient?
    /// Same origin, short timeouts, no network retries: `stations.list` answers at once.
    private let quickOrigin: OriginClient?
    private let store: MediaFolder
    private let engine: DownloadEngine
    /// Stations' download progress, which holds back a station's counts while its manifest is
    /// written in parts.
    private let progressReport: StationProgress
    private let events: DownloaderEvents
    private let logger: Logger
    private var lastAvailability: String?

    init(
        catalog: StateDB, origin: OriginClient?, quickOrigin: OriginClient?, store: MediaFolder,
        engine: DownloadEngine, progress: StationProgress, events: DownloaderEvents, logger: Logger
    ) {
        self.stations = StationStore(catalog: catalog)
        self.origin = origin
        self.quickOrigin = quickOrigin
        self.store = store
        self.engine = engine
        self.progressReport = progress
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
        var unavailable: String?
        if let quickOrigin {
            do {
                let answer = try await quickOrigin.get("/v1/stations", retry: Self.quickPolicy)
                available = true
                stations = (answer["stations"]?.arrayValue ?? []).filter { OriginID.isValid($0["id"]?.stringValue ?? "") }
                remoteOffline = (answer["offlineStations"]?.arrayValue ?? []).filter { OriginID.isValid($0["id"]?.stringValue ?? "") }
            } catch {
                logger.info("stations.list: origin not available: \(error)")
                unavailable = (error as? OriginError)?.name ?? RPCErrorKind.originUnreachable.name
            }
        }
        let availability = available ? "Available" : (local.isEmpty ? "NotAvailable" : "OfflineOnly")
        if availability != lastAvailability {
            lastAvailability = availability
            events.publish(.stationsAvailability(availability, localOffline: local.count))
        }
        var answer: [String: JSONValue] = [
            "available": .bool(available), "stations": .array(stations),
            "remoteOffline": .array(remoteOffline), "localOffline": .array(local),
        ]
        if let unavailable { answer["error"] = .string(unavailable) }
        return .object(answer)
    }

    /// Stations with at least one verified item (docs/catalog.md), from the catalog alone.
    private func localOffline() async throws -> [JSONValue] {
        try await stations.held().map { station -> JSONValue in
            [
                "id": .string(station.id), "name": .string(station.name),
                "itemCount": .number(Double(station.itemCount)),
                "verifiedCount": .number(Double(station.verifiedCount)),
                "durationSeconds": .number(station.durationSeconds),
                "sizeBytes": .number(Double(station.sizeBytes)),
                "expiresAt": station.expiresAt.map(UTCTimestamp.rfc3339).map(JSONValue.string) ?? .null,
                "syncedAt": station.syncedAt.map(UTCTimestamp.rfc3339).map(JSONValue.string) ?? .null,
                "onExpiry": .string(station.onExpiry),
            ]
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

    func sync(
        stationId: String, targetMinutes: Double?, keepStoredTarget: Bool = false,
        retry: RetryPolicy = .offlining
    ) async throws -> SyncResult {
        guard let origin else { throw DownloaderError.noOrigin() }
        let basis = try await stations.syncBasis(stationId: stationId)
        let (have, played, storedTarget) = (basis.have, basis.played, basis.targetMinutes)
        let target = keepStoredTarget ? storedTarget : targetMinutes
        let answer = try await origin.post(
            "/v1/stations/\(stationId)/offline",
            body: [
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
            if let id = raw.stringValue, OriginID.isValid(id) {
                removeList.append(id)
            } else {
                refused.append(RefusedItem(id: String(describing: raw).prefix(140).description, reason: "remove lists an id that is not a plain token"))
            }
        }
        for refusal in refused {
            logger.warning(
                "station item refused",
                metadata: [
                    "station": "\(stationId)", "item": "\(refusal.id)",
                    "reason": "\(refusal.reason)",
                ])
            events.publish(.itemRefused(stationId: stationId, itemId: refusal.id, reason: refusal.reason))
        }
        let manifest = StationStore.Manifest(
            stationId: stationId, name: answer["station"]?["name"]?.stringValue, manifestHash: answer["manifestHash"]?.stringValue,
            targetMinutes: target, expiresAt: answer["expiresAt"]?.stringValue.flatMap(UTCTimestamp.parseRFC3339),
            revalidateAt: answer["revalidateAt"]?.stringValue.flatMap(UTCTimestamp.parseRFC3339),
            onExpiry: answer["onExpiry"]?.stringValue.flatMap { ["delete", "keep"].contains($0) ? $0 : nil } ?? "delete",
            items: parsedItems, remove: removeList, maxAttempts: engine.maxAttempts)
        let applied = try await apply(manifest)
        // The catalog no longer points at these bytes: stop their transfers, then delete them.
        for (fileId, path) in applied.stale {
            await engine.cancelAndWait(fileId: fileId)
            await store.delete(path)
        }
        publishRequeued(applied.requeued)
        // The answer describes the station as this sync left it (counted in the manifest's
        // transaction), not as the engine has changed it since: a re-queued item that the origin
        // refuses again at once would otherwise be answered as failed or not by chance.
        let progress = applied.progress
        await progressReport.publish([stationId], afterSync: true)
        logger.notice(
            "station synced",
            metadata: LogMessageID.syncCompleted.metadata([
                "station": "\(stationId)", "added": "\(applied.added.count)", "removed": "\(removeList.count)",
                "refused": "\(refused.count)", "pending": "\(progress.pending)", "total": "\(progress.total)",
            ]))
        return SyncResult(
            stationId: stationId, added: applied.added, removed: removeList, refused: refused, pending: progress.pending,
            failed: progress.failed, total: progress.total, manifestHash: answer["manifestHash"]?.stringValue)
    }

    /// Writes the manifest into the catalog. A large one starts downloading before it is all
    /// written: its first items go in a transaction of their own and the engine starts on them
    /// while the rest is applied (meanwhile the engine does not report the station complete).
    /// Not when those first items replaced a file: the sync stops such transfers afterwards.
    private func apply(_ manifest: StationStore.Manifest) async throws -> StationStore.Applied {
        let head = 4 * max(1, await engine.maxParallel)
        guard manifest.items.count > 2 * head else { return try await stations.apply(manifest, now: Date()) }
        await progressReport.beginApplying(manifest.stationId)
        do {
            let first = try await stations.applyFirst(manifest, count: head, now: Date())
            var rest = try await stations.apply(manifest, from: head, now: Date())
            await progressReport.endApplying(manifest.stationId)
            rest.added = first.added + rest.added
            rest.stale = first.stale + rest.stale
            return rest
        } catch {
            await progressReport.endApplying(manifest.stationId)
            throw error
        }
    }

    /// Items whose failed file a sync (or the start) queued again: `ItemStateChanged` to `queued`.
    func publishRequeued(_ items: [StationStore.StationItemRef]) {
        for item in items {
            logger.info("station item queued again after it had failed", metadata: ["station": "\(item.stationId)", "item": "\(item.itemId)"])
            events.publish(.itemStateChanged(.stationItem(stationId: item.stationId, itemId: item.itemId), state: "queued"))
        }
    }

    /// At start: every station's items that had failed are tried again.
    func requeueFailedAtStart() async {
        do {
            publishRequeued(try await stations.requeueFailed(maxAttempts: engine.maxAttempts))
        } catch {
            logger.error("cannot queue the failed station items again: \(error)")
        }
    }

    func recordFailure(stationId: String, error: Error) async {
        _ = try? await stations.recordSyncFailure(stationId: stationId, error: "\(error)")
    }

    /// Re-syncs every station already held, asking only for what changed (`have` lists what is on disk).
    func resyncAll() async {
        guard origin != nil else { return }
        let ids = (try? await stations.ids()) ?? []
        for id in ids {
            do {
                _ = try await sync(stationId: id, targetMinutes: nil, keepStoredTarget: true)
            } catch is CancellationError {
                // Cut off by the stop: not a failure; the next start re-syncs.
                return
            } catch {
                logger.warning(
                    "re-sync of a station failed; it is tried again at the next round",
                    metadata: ["station": "\(id)", "error": "\(error)"])
                await recordFailure(stationId: id, error: error)
            }
        }
    }
}
