import Foundation
import Logging
import OriginAPI
import OriginClient
import Wire

/// Automatic prepositioning (PCD/VOC "Downloading also happens automatically in background"):
/// items of subscribed sources in selected categories start Discovered and are queued by
/// themselves, highest priority first, while their sizes fit within `catalog.maxAutoBytes`;
/// the policy (network, storage) then governs them as any download. When room runs short,
/// prepositioned content gives way: viewed, unsaved items past `catalog.keepViewedDays` first,
/// and, for content someone asked for explicitly, any unsaved prepositioned item, lowest
/// priority first. Explicit requests are never pushed out by this.
actor Prepositioner {
    private let store: ContentCatalogStore
    private let products: OfflineProducts
    private let gate: PolicyGate
    private let engine: DownloadEngine
    private let settings: CatalogSettings
    private let events: DownloaderEvents
    private let logger: Logger
    /// The last state and viewed flag reported per item, for `ItemStateChanged` and `ItemsChanged`.
    private var seen: [String: (state: String, viewed: Bool)]?
    /// Items the origin refused to offline, by id, with their content as refused: not asked
    /// again until the item changes.
    private var refused: [String: CatalogItem] = [:]
    private var pending = false
    /// After a TLS failure, no product is asked for before this (`RetryPolicy.tlsRetrySeconds`).
    private var originHeldUntil: ContinuousClock.Instant?

    init(
        store: ContentCatalogStore, products: OfflineProducts, gate: PolicyGate, engine: DownloadEngine,
        settings: CatalogSettings, events: DownloaderEvents, logger: Logger
    ) {
        self.store = store
        self.products = products
        self.gate = gate
        self.engine = engine
        self.settings = settings
        self.events = events
        self.logger = logger
    }

    /// Asks for a round soon (the service's next tick).
    func wake() { pending = true }

    /// One round: reports what changed, makes room if asked for, then queues what fits. Returns
    /// the pause before the next round.
    func round(now: Date = Date()) async -> Duration {
        pending = false
        do {
            let rows = try await store.items()
            report(rows)
            let waiting = try await store.waitingForRoom()
            // After making room, the queue is given time to admit what waited before looking again.
            if try await reclaimIfShort(rows, waiting: waiting, now: now) { return .seconds(2) }
            // Explicit requests waiting for room come first.
            if waiting.explicit == nil { try await queueWanted(rows) }
        } catch is CancellationError {
            // The stop: not a failure; the next start looks again.
            logger.debug("prepositioning round cut off by the stop")
        } catch {
            logger.warning("prepositioning round failed: \(error)")
        }
        return pending ? .milliseconds(50) : .seconds(1)
    }

    /// Item state changes (`ItemStateChanged`) and newly viewed items (`ItemsChanged`) since
    /// the last round; the first round only learns the states.
    private func report(_ rows: [ContentCatalogStore.ItemRow]) {
        var now: [String: (state: String, viewed: Bool)] = [:]
        var viewedChanged: [String] = []
        for row in rows {
            now[row.item.id] = (row.state, row.viewed)
            guard let seen, let before = seen[row.item.id] else { continue }
            if before.state != row.state {
                events.publish(.catalogItemStateChanged(itemId: row.item.id, productId: row.item.productId, state: row.state))
            }
            if before.viewed != row.viewed { viewedChanged.append(row.item.id) }
        }
        if !viewedChanged.isEmpty {
            events.publish(.itemsChanged(added: [], changed: viewedChanged, removed: []))
        }
        seen = now
    }

    /// When requests wait for room (`CacheLimit`), deletes prepositioned items that may give
    /// way until the room missing is freed. True when something was deleted.
    private func reclaimIfShort(
        _ all: [ContentCatalogStore.ItemRow], waiting: (explicit: [Int64]?, automatic: [Int64]?),
        now: Date
    ) async throws -> Bool {
        guard waiting.explicit != nil || waiting.automatic != nil else { return false }
        let room = await gate.budget.room(policy: gate.policy, running: await engine.runningJobs).room
        let need = (waiting.explicit ?? []).reduce(Int64(0)) { $0 + room.need(size: $1, onDisk: 0) }
        var short = need - room.available
        let rows = all.filter { $0.automatic && !$0.saved && $0.token != nil }
        let keepUntil = now.addingTimeInterval(-settings.keepViewedDays * 86_400)
        var victims = rows.filter { ($0.viewedAt ?? .distantFuture) <= keepUntil }.sorted { $0.viewedAt! < $1.viewedAt! }
        if let automatic = waiting.automatic {
            // Prepositioned content waits too: only what was viewed long enough ago makes room for it.
            short = max(short, automatic.reduce(Int64(0)) { $0 + room.need(size: $1, onDisk: 0) } - room.available)
        }
        if waiting.explicit != nil {
            victims += rows.filter { row in !victims.contains { $0.item.id == row.item.id } }
                .sorted { ($0.item.priority, $0.item.publishedAt) < ($1.item.priority, $1.item.publishedAt) }
        }
        guard short > 0, !victims.isEmpty else { return false }
        var freed: Int64 = 0
        var chosen: [ContentCatalogStore.ItemRow] = []
        for victim in victims where freed < short {
            chosen.append(victim)
            freed += room.need(size: victim.item.sizeBytes, onDisk: 0)
        }
        for victim in chosen {
            guard let token = victim.token else { continue }
            logger.info("catalog item \(victim.item.id) (\(victim.item.sizeBytes) bytes) removed to make room")
            _ = try? await products.delete(token: token)
        }
        try await store.markReclaimed(chosen.map(\.item.id))
        await engine.kick()
        return true
    }

    /// Queues the wanted items that fit, highest priority first, stopping at the first that
    /// would pass `maxAutoBytes` (a lower priority never jumps ahead of a higher one).
    private func queueWanted(_ rows: [ContentCatalogStore.ItemRow]) async throws {
        guard settings.maxAutoBytes > 0 else { return }
        if let held = originHeldUntil, ContinuousClock.now < held { return }
        let subscribed = Set(try await store.sources().filter(\.subscribed).map(\.id))
        let selected = Set(try await store.categories().filter(\.selected).map(\.id))
        guard !subscribed.isEmpty, !selected.isEmpty else { return }
        var used = rows.filter { $0.automatic && $0.state != "failed" }.reduce(Int64(0)) { $0 + $1.item.sizeBytes }
        let wanted = CatalogQuery.sorted(
            rows.filter { row in
                !row.removed && !row.reclaimed && row.token == nil && subscribed.contains(row.item.sourceId)
                    && !selected.isDisjoint(with: row.item.categories) && refused[row.item.id] != row.item
            }, by: [])
        guard !wanted.isEmpty else { return }
        // Background traffic only where the policy allows every download (as re-validation).
        guard gate.allowsBackgroundTraffic else { return }
        for row in wanted {
            guard used + row.item.sizeBytes <= settings.maxAutoBytes else { break }
            let quality = QualityChoice(requested: nil, productType: row.item.type, policy: gate.policy)
            do {
                let status = try await products.add(
                    productId: row.item.productId, productType: row.item.type, quality: quality,
                    automatic: true,
                    prepositionSeconds: settings.prepositionSeconds > 0 ? settings.prepositionSeconds : nil,
                    retry: Self.retry)
                guard let token = status["token"]?.stringValue else { continue }
                try await store.setToken(row.item.id, token: token)
                used += row.item.sizeBytes
                let state = status["state"]?.stringValue ?? "queued"
                if seen?[row.item.id]?.state != state {
                    seen?[row.item.id] = (state, row.viewed)
                    events.publish(.catalogItemStateChanged(itemId: row.item.id, productId: row.item.productId, state: state))
                }
                logger.info("catalog item \(row.item.id) (priority \(row.item.priority)) queued for prepositioning")
            } catch let error as OriginError where error.status == nil {
                // The origin is out of reach: the next round tries again (after a refused TLS
                // edge, not for a while).
                logger.info("prepositioning waits for the origin: \(error)")
                let wait = RetryPolicy.minimumDelay(after: error)
                originHeldUntil = wait > 0 ? ContinuousClock.now + .seconds(wait) : nil
                return
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                logger.warning("catalog item \(row.item.id) not prepositioned: \(error)")
                refused[row.item.id] = row.item
            }
        }
    }

    /// A round asks the origin once, quickly: a failure waits for the next round.
    static let retry = RetryPolicy(statusRetries: 1, baseDelay: 0.2, maxStatusDelay: 1, networkRetries: 0, maxNetworkDelay: 0)
}
