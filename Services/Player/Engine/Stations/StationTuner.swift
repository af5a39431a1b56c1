import Logging
import OriginClient
import Wire

/// Which station `station.tune` plays (Feed.fm `activeStation = station`): a station on the
/// device plays from the catalog alone (no network at all); any other is streamed from the
/// origin's play queue; with the origin unreachable a station on the device plays instead
/// (Feed.fm's OfflineOnly). And why a station cannot be played, asking the origin what it is.
struct StationTuner: Sendable {
    let store: LocalStationStore
    /// Nil when none is configured.
    let origin: OriginClient?
    let logger: Logger

    /// `stationId` as the device holds it, from its first item with a verified file; nil when
    /// the device holds none of its items.
    func onDevice(_ stationId: String) async throws -> StationCursor? {
        guard let (name, items) = try await store.playable(stationId: stationId), !items.isEmpty else { return nil }
        return .onDevice(stationId, name: name, items: items)
    }

    /// `stationId` streamed from the origin's play queue; or, with the origin failing, the first
    /// station on the device (`fallback`). `knownUnreachable` (the last look found no answer)
    /// makes it one try, so that a station on the device plays at once rather than after the
    /// interactive retries. Either way every request of the call, the refusal's question
    /// included, ends within the interactive deadline counted from here.
    func streamed(
        _ stationId: String, from origin: OriginClient, offlineMode: Bool, knownUnreachable: Bool
    ) async throws -> (cursor: StationCursor, fallback: Bool) {
        if offlineMode {
            throw PlayerError(
                .stationNotPlayable, "Station \(stationId) is not on this device and the app is in offline mode; go online to stream it.",
                reason: RPCErrorKind.offlineMode.name)
        }
        let retry = (knownUnreachable ? RetryPolicy.interactiveOnce : .interactive).startingNow()
        do {
            let (name, items) = try await StationQueue.next(stationId: stationId, played: [], origin: origin, retry: retry)
            guard !items.isEmpty else {
                throw PlayerError(.stationNotPlayable, "The origin has nothing to play on station \(stationId) right now.")
            }
            return (StationCursor(id: stationId, name: name ?? stationId, items: items, index: 0, streaming: true), false)
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
            return (.onDevice(local, name: name, items: items), true)
        } catch let error as OriginError {
            throw await refusal(stationId, refused: error, retry: retry)
        }
    }

    /// Why a station that is not on the device cannot be tuned, asking the origin what it is:
    /// an offline station not synced yet, a streaming station whose play queue was refused
    /// (`refused`), or one the origin does not know. `retry` bounds the question (the caller's
    /// deadline, when it already asked the origin something).
    func refusal(
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
