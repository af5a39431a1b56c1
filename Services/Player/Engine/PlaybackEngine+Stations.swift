import Catalog
import Foundation
import Wire

extension PlaybackEngine {
    /// Feed.fm `activeStation = station; play()`: plays a local offline station from its first
    /// item with a verified file, in station order, from the catalog alone (no network at all).
    func tune(stationId: String) async throws {
        let catalog = try await catalog()
        let found = try await LocalStationStore(catalog: catalog).playable(stationId: stationId)
        guard let (name, items) = found, let first = items.first else {
            throw await remoteStationRefusal(stationId)
        }
        wantPlaying = true
        load(stationProduct(first, stationId), stationId: stationId, keepPlaying: true)
        station = StationCursor(id: stationId, name: name, items: items, index: 0)
        playRequestedAt = .now
        queueNextStationItem()
        if origin != nil { Task { await self.checkAvailability() } }
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
        let previous = active?.product
        stopAndForget()
        publishTransition(previous: previous, active: nil)
        setState(.idle)
    }

    /// Loads the item after the active one; false when there is none.
    func stationAdvanceIfMore(keepPlaying: Bool) -> Bool {
        guard var cursor = station, cursor.index + 1 < cursor.items.count else { return false }
        cursor.index += 1
        let itemId = cursor.items[cursor.index]
        load(stationProduct(itemId, cursor.id), stationId: cursor.id, keepPlaying: keepPlaying)
        station = cursor
        queueNextStationItem()
        return true
    }

    /// Sets the station's following item as next, so the border is gapless.
    func queueNextStationItem() {
        guard let cursor = station, cursor.index + 1 < cursor.items.count else { return }
        setNext(stationProduct(cursor.items[cursor.index + 1], cursor.id), stationId: cursor.id)
    }

    func stationProduct(_ itemId: String, _ stationId: String) -> MediaProduct {
        MediaProduct(productId: itemId, productType: "TRACK", referenceId: "\(stationId):\(itemId):\(newToken())",
                     sourceType: "STATION", sourceId: stationId)
    }

    /// Marks a station item heard (`stationItems.playedAt`), which the downloader sends as
    /// `played` at the next sync so the origin can swap heard items out.
    func stationItemStarted(_ current: Active) {
        guard let stationId = current.stationId else { return }
        let itemId = current.product.productId
        let catalog = catalog
        Task {
            try? await LocalStationStore(catalog: catalog()).markPlayed(stationId: stationId, itemId: itemId, at: Date())
        }
    }

    var activeStationJSON: JSONValue {
        guard let station else { return .null }
        return ["id": .string(station.id), "name": .string(station.name),
                "itemCount": .number(Double(station.items.count)), "index": .number(Double(station.index))]
    }
}
