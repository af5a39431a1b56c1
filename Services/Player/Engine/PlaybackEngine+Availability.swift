import OriginClient
import StateDB
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

    /// Asks the origin for its stations once (no retries) and publishes what that means; in
    /// offline mode the origin is not asked and counts as unreachable. Returns the shortest
    /// wait before asking again (`RetryPolicy.minimumDelay`: a minute after a TLS failure). A
    /// check cut off by a stop changes nothing.
    @discardableResult
    func checkAvailability() async -> Double {
        var reachable = false
        var wait = 0.0
        // In offline mode the player sends nothing to the origin: only what the device holds counts.
        if let origin, await !currentConfig().offlineMode {
            do {
                _ = try await origin.get("/v1/stations", retry: .none)
                reachable = true
            } catch {
                if Task.isCancelled { return 0 }
                wait = RetryPolicy.minimumDelay(after: error)
            }
        }
        let local = await localStationCount()
        let new: Availability = reachable ? .available : (local > 0 ? .offlineOnly : .notAvailable)
        setAvailability(new, localStations: local)
        return wait
    }

    /// Records what the origin's last answer (or its silence) means, with an event on a change.
    func setAvailability(_ new: Availability, localStations: Int? = nil) {
        guard new != availability else { return }
        availability = new
        // Without an origin there is nothing to be available or not: status only, no event.
        guard origin != nil else { return }
        var fields: [String: JSONValue] = ["origin": origin.map { .string($0.baseURL) } ?? .null]
        if let localStations { fields["localStations"] = .number(Double(localStations)) }
        publish(new.eventType, .object(fields))
    }

    /// Stations with at least one verified item: playable with no network at all.
    func localStationCount() async -> Int {
        guard let catalog = try? await catalog() else { return 0 }
        return (try? await LocalStationStore(catalog: catalog).playableCount()) ?? 0
    }

    /// Why a station that is not on the device cannot be tuned, asking the origin what it is:
    /// an offline station not synced yet, a streaming station whose play queue was refused
    /// (`refused`), or one the origin does not know. `retry` bounds the question (the caller's
    /// deadline, when it already asked the origin something).
    func remoteStationRefusal(
        _ stationId: String, refused: OriginError? = nil,
        retry: RetryPolicy = .interactive
    ) async -> any Error {
        guard let origin else {
            return PlayerError(.stationNotPlayable, "Station \(stationId) is not on this device and no origin is configured.")
        }
        do {
            let answer = try await origin.get("/v1/stations", retry: retry)
            let streaming = answer["stations"]?.arrayValue?.first { $0["id"]?.stringValue == stationId }
            let offline = answer["offlineStations"]?.arrayValue?.contains { $0["id"]?.stringValue == stationId } ?? false
            if offline {
                return PlayerError(
                    .stationNotPlayable, "Station \(stationId) is an offline station not synced yet; sync it with the downloader's stations.sync first.")
            }
            if streaming != nil {
                return PlayerError(.stationNotPlayable, "The origin refused to play streaming station \(stationId): \(refused?.message ?? "no reason given").")
            }
            return PlayerError(.stationNotPlayable, "The origin knows no station \(stationId).")
        } catch {
            return error
        }
    }
}
