import Foundation
import OriginClient
import StateDB
import Wire

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

    /// Feed.fm `activeStation = station; play()`. A station on the device plays from its first
    /// item with a verified file, in station order, from the catalog alone (no network at all).
    /// Any other is streamed: its items come from the origin's play queue and play through the
    /// same engine, streamed; with the origin unreachable a station on the device plays instead
    /// (Feed.fm's OfflineOnly).
    func tune(stationId: String) async throws -> Tuned {
        let catalog = try await catalog()
        let store = LocalStationStore(catalog: catalog)
        if let (name, items) = try await store.playable(stationId: stationId), !items.isEmpty {
            startStation(StationCursor(id: stationId, name: name, items: items.map(StationItem.local), index: 0, streaming: false))
            if origin != nil { Task { await self.checkAvailability() } }
            return Tuned(stationId: stationId, streaming: false, fallback: false)
        }
        guard let origin else { throw await remoteStationRefusal(stationId) }
        let config = await currentConfig()
        if config.offlineMode {
            throw PlayerError(
                .stationNotPlayable, "Station \(stationId) is not on this device and the app is in offline mode; go online to stream it.",
                reason: RPCErrorKind.offlineMode.name)
        }
        // Known unreachable already (the last check found no answer): one try, so that a station
        // on the device plays at once rather than after the interactive retries. Either way
        // every request of the call, the refusal's question below included, ends within the
        // interactive deadline counted from here.
        let retry = ([.offlineOnly, .notAvailable].contains(availability) ? RetryPolicy.interactiveOnce : .interactive).startingNow()
        do {
            let (name, items) = try await StationQueue.next(stationId: stationId, played: [], origin: origin, retry: retry)
            guard !items.isEmpty else {
                throw PlayerError(.stationNotPlayable, "The origin has nothing to play on station \(stationId) right now.")
            }
            startStation(StationCursor(id: stationId, name: name ?? stationId, items: items, index: 0, streaming: true))
            setAvailability(.available)
            return Tuned(stationId: stationId, streaming: true, fallback: false)
        } catch let error as OriginError where error.isOriginFailing {
            guard let local = try await store.firstPlayable(),
                let (name, items) = try await store.playable(stationId: local), !items.isEmpty
            else {
                // Nothing to fall back to: the origin's failure under the name the contract gives
                // it (a refused TLS edge keeps its own, which says what to check).
                throw error.name == RPCErrorKind.originUnreachable.name || error.isTLSFailure
                    ? error
                    : OriginError(
                        name: RPCErrorKind.originUnreachable.name,
                        message: "the origin could not be reached (\(error.message)). Try again later.",
                        status: error.status, subStatus: error.subStatus, transportError: error.transportError)
            }
            logger.info("station \(stationId) cannot be reached (\(error.name)); playing \(local) from the device")
            startStation(StationCursor(id: local, name: name, items: items.map(StationItem.local), index: 0, streaming: false))
            setAvailability(.offlineOnly)
            return Tuned(stationId: local, streaming: false, fallback: true)
        } catch let error as OriginError {
            throw await remoteStationRefusal(stationId, refused: error, retry: retry)
        }
    }

    private func startStation(_ cursor: StationCursor) {
        wantPlaying = true
        load(stationProduct(cursor.items[0], cursor.id), stationId: cursor.id, keepPlaying: true)
        station = cursor
        stationFetch?.cancel()
        stationFetch = nil
        playRequestedAt = .now
        queueNextStationItem()
    }

    /// `station.skip`: the next item now (explicit transition); past the last one the station ends.
    func stationSkip() throws {
        guard station != nil, active != nil else {
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
        guard var cursor = station, cursor.index + 1 < cursor.items.count else { return false }
        cursor.index += 1
        let item = cursor.items[cursor.index]
        load(stationProduct(item, cursor.id), stationId: cursor.id, keepPlaying: keepPlaying)
        station = cursor
        queueNextStationItem()
        return true
    }

    /// Sets the station's following item as next, so the border is gapless, and asks a streaming
    /// station's origin for more items while fewer than a batch are left after the active one.
    func queueNextStationItem() {
        guard let cursor = station else { return }
        if cursor.index + 1 < cursor.items.count, next == nil || next?.stationId != cursor.id {
            setNext(stationProduct(cursor.items[cursor.index + 1], cursor.id), stationId: cursor.id)
        }
        requestMoreStationItems()
    }

    /// One request at a time; the answer is appended to the station it was asked for.
    private func requestMoreStationItems() {
        guard let cursor = station, cursor.streaming, stationFetch == nil, let origin,
            cursor.items.count - cursor.index - 1 < StationQueue.batch
        else { return }
        let played = cursor.items[...cursor.index].map(\.itemId)
        let stationId = cursor.id
        stationFetch = Task {
            let result: Result<(name: String?, items: [StationItem]), any Error>
            do {
                result = .success(try await StationQueue.next(stationId: stationId, played: played, origin: origin, retry: .streaming))
            } catch {
                result = .failure(error)
            }
            self.stationItemsArrived(stationId, result)
        }
        // Nothing queued after the active item: its end waits for the answer (released by
        // `stationRanDry` when none comes).
        if next == nil, let current = active, current.submitted { pipe.expectNext(after: current.token) }
    }

    private func stationItemsArrived(_ stationId: String, _ result: Result<(name: String?, items: [StationItem]), any Error>) {
        stationFetch = nil
        guard var cursor = station, cursor.id == stationId, cursor.streaming else { return }
        switch result {
        case .success(let answer) where !answer.items.isEmpty:
            cursor.items += answer.items
            station = cursor
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

    func stationProduct(_ item: StationItem, _ stationId: String) -> MediaProduct {
        MediaProduct(
            productId: item.productId, productType: "TRACK", referenceId: "\(stationId):\(item.itemId):\(newToken())",
            sourceType: "STATION", sourceId: stationId)
    }

    /// What a station's item list says of `productId`, to fill what its source did not.
    func stationDisplay(for productId: String) -> DisplayMetadata? {
        station?.items.first { $0.productId == productId }?.display
    }

    /// Marks an offline station's item heard (`stationItems.playedAt`), which the downloader sends
    /// as `played` at the next sync so the origin can swap heard items out.
    func stationItemStarted(_ current: Active) {
        guard let stationId = current.stationId, station?.streaming != true else { return }
        let itemId = current.product.productId
        let catalog = catalog
        Task {
            try? await LocalStationStore(catalog: catalog()).markPlayed(stationId: stationId, itemId: itemId, at: Date())
        }
    }

    var activeStationJSON: JSONValue {
        guard let station else { return .null }
        return [
            "id": .string(station.id), "name": .string(station.name), "streaming": .bool(station.streaming),
            "itemCount": .number(Double(station.items.count)), "index": .number(Double(station.index)),
        ]
    }
}
