import Foundation
import OriginClient
import StateDB
import Wire

/// The engine playing a station (`StationPlayer`): its items loaded one after the other as
/// products, each next one set so that every border is gapless, and a streaming station's
/// play queue asked for more before it runs out.
extension PlaybackEngine {
    /// What `station.tune` ended up playing.
    struct Tuned: Encodable, Sendable {
        var ok = true
        var stationId: String
        /// Items come from the origin's play queue (streamed), not from the device.
        var streaming: Bool
        /// The station asked for could not be reached: a station on the device plays instead.
        var fallback: Bool
    }

    /// Feed.fm `activeStation = station; play()`, the station chosen by `StationTuner`: from
    /// the device when it holds it, else streamed (or, the origin unreachable, another station
    /// from the device). Every item plays through the same engine.
    func tune(stationId: String) async throws -> Tuned {
        let tuner = StationTuner(store: LocalStationStore(catalog: try await catalog()), origin: origin, logger: logger)
        if let cursor = try await tuner.onDevice(stationId) {
            startStation(cursor)
            if origin != nil { Task { await self.checkAvailability() } }
            return Tuned(stationId: stationId, streaming: false, fallback: false)
        }
        guard let origin else { throw await tuner.refusal(stationId) }
        let offlineMode = await currentConfig().offlineMode
        let (cursor, fallback) = try await tuner.streamed(
            stationId, from: origin, offlineMode: offlineMode,
            knownUnreachable: [.offlineOnly, .notAvailable].contains(availability))
        startStation(cursor)
        setAvailability(fallback ? .offlineOnly : .available)
        return Tuned(stationId: cursor.id, streaming: cursor.streaming, fallback: fallback)
    }

    private func startStation(_ cursor: StationCursor) {
        wantPlaying = true
        load(stationProduct(cursor.items[0], cursor.id), stationId: cursor.id, keepPlaying: true)
        station.start(cursor)
        playRequestedAt = .now
        queueNextStationItem()
    }

    /// `station.skip`: the next item now (explicit transition); past the last one the station ends.
    func stationSkip() throws {
        guard station.isPlaying, active != nil else {
            throw PlayerError(.nothingToPlay, "No station is playing; tune one with station.tune.")
        }
        stationAdvance()
    }

    func stationAdvance() {
        if stationAdvanceIfMore(keepPlaying: true) { return }
        // Nothing left: the station has ended.
        let previous = announcedProduct
        stopAndForget()
        // No transition when clients never heard of a product (one skipped before it resolved).
        if previous != nil { publishTransition(previous: previous, active: nil) }
        setState(.idle)
    }

    /// Loads the item after the active one; false when there is none.
    func stationAdvanceIfMore(keepPlaying: Bool) -> Bool {
        guard let stationId = station.cursor?.id, let item = station.advance() else { return false }
        load(stationProduct(item, stationId), stationId: stationId, keepPlaying: keepPlaying)
        queueNextStationItem()
        return true
    }

    /// Sets the station's following item as next, so the border is gapless, and asks a streaming
    /// station's origin for more items while fewer than a batch are left after the active one.
    func queueNextStationItem() {
        guard let stationId = station.cursor?.id else { return }
        if let item = station.following, next == nil || next?.stationId != stationId {
            setNext(stationProduct(item, stationId), stationId: stationId)
        }
        requestMoreStationItems()
    }

    /// One request at a time; the answer is appended to the station it was asked for.
    private func requestMoreStationItems() {
        guard let origin, let (stationId, played) = station.wantsMore else { return }
        station.fetching(
            Task {
                let result: Result<(name: String?, items: [StationItem]), any Error>
                do {
                    result = .success(try await StationQueue.next(stationId: stationId, played: played, origin: origin, retry: .streaming))
                } catch {
                    result = .failure(error)
                }
                self.stationItemsArrived(stationId, result)
            })
        // Nothing queued after the active item: its end waits for the answer (released by
        // `stationRanDry` when none comes).
        if next == nil, let current = active, current.submitted { pipe.expectNext(after: current.token) }
    }

    private func stationItemsArrived(_ stationId: String, _ result: Result<(name: String?, items: [StationItem]), any Error>) {
        guard station.fetchEnded(stationId) else { return }
        switch result {
        case .success(let answer) where !answer.items.isEmpty:
            station.append(answer.items)
            queueNextStationItem()
        case .success:
            logger.warning("station \(stationId): the origin has no more items")
            stationRanDry()
        case .failure(let error):
            if Task.isCancelled { return }
            logger.warning("station \(stationId): cannot get more items: \(PlayerError.describe(error).message)")
            stationRanDry()
        }
    }

    /// A streaming station got no more items: what is queued plays to its end, then the station
    /// ends (the wait for a following item is released).
    private func stationRanDry() {
        if let queued = next, queued.handedOver {
            _ = pipe.setNext(nil, after: queued.token)
        } else if next == nil, let current = active, current.submitted {
            _ = pipe.setNext(nil, after: current.token)
        }
    }

    /// A station always has its following item coming: once the next item (`token`) is queued
    /// in the pipeline, its end waits for the one after (set when it becomes active), so every
    /// border of a station is gapless however far ahead the decoder runs.
    func stationHasItem(after token: TrackToken) -> Bool {
        next?.token == token && station.hasItemAfterFollowing
    }

    func stationProduct(_ item: StationItem, _ stationId: String) -> MediaProduct {
        MediaProduct(
            productId: item.productId, productType: "TRACK", referenceId: "\(stationId):\(item.itemId):\(newToken())",
            sourceType: "STATION", sourceId: stationId)
    }

    /// Marks an offline station's item heard (`stationItems.playedAt`), which the downloader sends
    /// as `played` at the next sync so the origin can swap heard items out.
    func stationItemStarted(_ current: Active) {
        guard let stationId = current.stationId, station.cursor?.streaming != true else { return }
        let itemId = current.product.productId
        let catalog = catalog
        Task {
            try? await LocalStationStore(catalog: catalog()).markPlayed(stationId: stationId, itemId: itemId, at: Date())
        }
    }
}
