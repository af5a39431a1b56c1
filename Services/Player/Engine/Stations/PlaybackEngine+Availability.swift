import OriginClient
import StateDB
import Wire

extension PlaybackEngine {
    /// Feed.fm's view of the service: `Available` (origin answered), `OfflineOnly` (origin
    /// unreachable but stations are on the device), `NotAvailable` (neither).
    enum Availability: String, Sendable {
        case unknown = "UNKNOWN", available = "AVAILABLE", offlineOnly = "OFFLINE_ONLY", notAvailable = "NOT_AVAILABLE"
    }

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
        guard let origin else { return }
        events.publish(.availability(new, origin: origin.baseURL, localStations: localStations))
    }

    /// Stations with at least one verified item: playable with no network at all.
    func localStationCount() async -> Int {
        guard let catalog = try? await catalog() else { return 0 }
        return (try? await LocalStationStore(catalog: catalog).playableCount()) ?? 0
    }
}
