import Catalog
import OriginClient
import Wire

extension PlaybackEngine {
    /// Feed.fm's view of the service: `Available` (origin answered), `OfflineOnly` (origin
    /// unreachable but stations are on the device), `NotAvailable` (neither).
    enum Availability: String, Sendable {
        case unknown = "UNKNOWN", available = "AVAILABLE", offlineOnly = "OFFLINE_ONLY", notAvailable = "NOT_AVAILABLE"
        var eventType: String {
            switch self {
            case .available: "Available"
            case .offlineOnly: "OfflineOnly"
            case .notAvailable, .unknown: "NotAvailable"
            }
        }
    }

    func setOrigin(_ origin: OriginClient?) { self.origin = origin }

    /// Asks the origin for its stations once (no retries) and publishes what that means.
    func checkAvailability() async {
        var reachable = false
        if let origin {
            reachable = (try? await origin.get("/v1/stations", retry: .none)) != nil
        }
        let local = await localStationCount()
        let new: Availability = reachable ? .available : (local > 0 ? .offlineOnly : .notAvailable)
        guard new != availability else { return }
        availability = new
        // Without an origin there is nothing to be available or not: status only, no event.
        guard origin != nil else { return }
        publish(new.eventType, ["localStations": .number(Double(local)), "origin": origin.map { .string($0.baseURL) } ?? .null])
    }

    /// Stations with at least one verified item: playable with no network at all.
    func localStationCount() async -> Int {
        guard let catalog = try? await catalog() else { return 0 }
        return (try? await LocalStationStore(catalog: catalog).playableCount()) ?? 0
    }

    /// Why a station that is not on the device cannot be tuned, asking the origin what it is.
    /// The reference origin lists streaming stations but offers no play queue for them (only
    /// offline stations carry items), so those are refused with a clear reason.
    func remoteStationRefusal(_ stationId: String) async -> any Error {
        guard let origin else {
            return PlayerError(.stationNotPlayable, "Station \(stationId) is not on this device and no origin is configured.")
        }
        do {
            let answer = try await origin.get("/v1/stations", retry: .interactive)
            let streaming = answer["stations"]?.arrayValue?.first { $0["id"]?.stringValue == stationId }
            let offline = answer["offlineStations"]?.arrayValue?.contains { $0["id"]?.stringValue == stationId } ?? false
            if offline {
                return PlayerError(.stationNotPlayable, "Station \(stationId) is an offline station not synced yet; sync it with the downloader's stations.sync first.")
            }
            if streaming != nil {
                return PlayerError(.stationNotPlayable, "Station \(stationId) is streaming only and the origin offers no play queue for streaming stations (the origin lists items for offline stations only).")
            }
            return PlayerError(.stationNotPlayable, "The origin knows no station \(stationId).")
        } catch {
            return error
        }
    }
}
