import Foundation
import Logging
import OriginClient
import StateDB
import Wire

/// Feed.fm "Expiration": asks the origin to extend what is held (at start while online and on
/// `sync.now`), and applies each station's `onExpiry` once the trusted time passes its expiry.
actor OfflineExtension {
    private let expiries: ExpiryStore
    private let origin: OriginClient?
    private let store: MediaFolder
    private let engine: DownloadEngine
    private let events: DownloaderEvents
    private let clock: TrustedTimeRecorder
    private let logger: Logger

    init(
        catalog: StateDB, origin: OriginClient?, store: MediaFolder, engine: DownloadEngine,
        events: DownloaderEvents, clock: TrustedTimeRecorder, logger: Logger
    ) {
        self.expiries = ExpiryStore(catalog: catalog)
        self.origin = origin
        self.store = store
        self.engine = engine
        self.events = events
        self.clock = clock
        self.logger = logger
    }

    /// `POST /v1/offline/extend` for every station held and every product offlined; stores the new
    /// expiries, then applies expiry. Throws when the origin cannot be reached (nothing changes).
    func extend(retry: RetryPolicy = .offlining) async throws -> JSONValue {
        guard let origin else { throw DownloaderError.noOrigin() }
        let held = try await expiries.held()
        let (stationIds, productIds) = (held.stationIds, held.productIds)
        let answer = try await origin.post(
            "/v1/offline/extend",
            body: [
                "stations": .array(stationIds.map(JSONValue.string)), "products": .array(productIds.map(JSONValue.string)),
            ], retry: retry)
        let stations = Self.entries(answer["stations"], dateKey: "expiresAt")
        let products = Self.entries(answer["products"], dateKey: "validUntil")
        // Only what was asked about is stored.
        let extendedStations = stations.filter { stationIds.contains($0.0) }.map { id, expiresAt, entry in
            ExpiryStore.StationExtension(
                id: id, expiresAt: expiresAt,
                revalidateAt: entry["revalidateAt"]?.stringValue.flatMap(UTCTimestamp.parseRFC3339),
                onExpiry: entry["onExpiry"]?.stringValue.flatMap { ["delete", "keep"].contains($0) ? $0 : nil })
        }
        let extendedProducts = products.filter { productIds.contains($0.0) }.map { id, validUntil, _ in
            ExpiryStore.ProductExtension(requestedProductId: id, validUntil: validUntil)
        }
        try await expiries.recordExtension(stations: extendedStations, products: extendedProducts)
        await clock.capture()
        let expired = try await expire()
        func list(_ rows: [(String, Date, JSONValue)], _ key: String) -> JSONValue {
            .array(rows.map { ["id": .string($0.0), key: .string(UTCTimestamp.rfc3339($0.1))] })
        }
        return [
            "stations": list(stations, "expiresAt"), "products": list(products, "validUntil"),
            "rejected": .array(answer["rejected"]?.arrayValue ?? []),
            "expired": .array(expired.map(JSONValue.string)),
        ]
    }

    /// Well-formed `{id, <dateKey>}` entries; anything else is ignored (hostile input loses nothing).
    private static func entries(_ value: JSONValue?, dateKey: String) -> [(String, Date, JSONValue)] {
        (value?.arrayValue ?? []).compactMap { entry in
            guard let id = entry["id"]?.stringValue, OriginID.isValid(id),
                let date = entry[dateKey]?.stringValue.flatMap(UTCTimestamp.parseRFC3339)
            else { return nil }
            return (id, date, entry)
        }
    }

    /// Deletes the stations with `onExpiry = delete` whose `expiresAt` is past at the trusted time:
    /// their files (unless something else holds them), items and row, with a `StationExpired`
    /// event each. `keep` stations stay; `offline.state` answers OFFLINED_BUT_NOT_VALID for them.
    @discardableResult
    func expire() async throws -> [String] {
        let now = await clock.now()
        let (expired, garbage) = try await expiries.deleteExpiredStations(at: now)
        guard !expired.isEmpty else { return [] }
        await engine.discard(garbage)
        for id in expired {
            logger.info("station \(id) expired (onExpiry delete): its files are deleted")
            events.publish(.stationExpired(stationId: id, onExpiry: "delete"))
        }
        return expired
    }
}
