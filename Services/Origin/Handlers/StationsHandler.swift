import NIOHTTP1
import Wire

extension Origin {
    /// `GET /v1/stations`: every station with its offline flag, and the offline ones again
    /// with what downloading all of them would cost.
    func listStations(_ request: OriginRequest) -> OriginResponse {
        let stations = index.catalog.stations
        let listed: [JSONValue] = stations.map { ["id": .string($0.id), "name": .string($0.name), "offline": .bool($0.offline)] }
        let offline: [JSONValue] = stations.filter(\.offline).map { station in
            let tracks = station.trackIds.compactMap { index.tracksById[$0] }
            let size = tracks.compactMap { index.file(forTrack: $0)?.sizeBytes }.reduce(0, +)
            let seconds = tracks.map(\.durationSeconds).reduce(0, +)
            return [
                "id": .string(station.id), "name": .string(station.name), "itemCount": .int(tracks.count),
                "durationSeconds": .number((seconds * 1000).rounded() / 1000), "sizeBytes": .int(size),
                "onExpiry": .string(station.onExpiry.rawValue),
            ]
        }
        return ok(["stations": .array(listed), "offlineStations": .array(offline)])
    }

    /// `POST /v1/stations/{id}/offline`: what the device should download and delete.
    func syncStation(_ request: OriginRequest, stationId: String) -> OriginResponse {
        guard let station = index.stationsById[stationId] else { return notFound("Station \(stationId)", request) }
        guard station.offline else {
            return error(.forbidden, subStatus: 4007, "Station \(stationId) cannot be taken offline.", path: request.path)
        }
        let body: [String: JSONValue]
        switch objectBody(request, emptyAllowed: true) {
        case .success(let object): body = object
        case .failure(let failure): return failure.response
        }
        var targetMinutes: Double?
        if let value = body["targetMinutes"], !value.isNull {
            guard let minutes = value.doubleValue, minutes.isFinite, minutes >= 0 else {
                return badRequest("targetMinutes must be a non-negative number or null.", request)
            }
            targetMinutes = minutes
        }
        guard let have = JSONValue.strings(body["have"]), let played = JSONValue.strings(body["played"]) else {
            return badRequest("have and played must be arrays of item ids.", request)
        }
        let tracks = station.trackIds.compactMap { index.tracksById[$0] }
        let selection = OfflineSelection(
            station: tracks.map { ($0.id, $0.durationSeconds) },
            have: have, played: played, targetMinutes: targetMinutes)
        let items: [JSONValue] = selection.add.compactMap { id in index.tracksById[id].flatMap(itemJSON) }
        return ok([
            "station": ["id": .string(station.id), "name": .string(station.name)],
            "manifestHash": .string(manifestHash(selection.holding)),
            "expiresAt": .string(after(seconds: station.validitySeconds)),
            "revalidateAt": .string(after(seconds: station.revalidateSeconds)),
            "onExpiry": .string(station.onExpiry.rawValue),
            "items": .array(items),
            "remove": .array(selection.remove.map(JSONValue.string)),
            "holding": .array(selection.holding.map(JSONValue.string)),
        ])
    }

    /// `POST /v1/offline/extend`: new expiries for offline stations and products still
    /// allowed offline; anything else is listed under `rejected` with a reason.
    func extendOffline(_ request: OriginRequest) -> OriginResponse {
        let body: [String: JSONValue]
        switch objectBody(request, emptyAllowed: true) {
        case .success(let object): body = object
        case .failure(let failure): return failure.response
        }
        guard let stationIds = JSONValue.strings(body["stations"]), let productIds = JSONValue.strings(body["products"]) else {
            return badRequest("stations and products must be arrays of ids.", request)
        }
        var stations: [JSONValue] = []
        var products: [JSONValue] = []
        var rejected: [JSONValue] = []
        for id in stationIds {
            guard let station = index.stationsById[id], station.offline else {
                rejected.append(["id": .string(id), "kind": "station", "reason": "unknown or not an offline station"])
                continue
            }
            stations.append([
                "id": .string(id), "expiresAt": .string(after(seconds: station.validitySeconds)),
                "revalidateAt": .string(after(seconds: station.revalidateSeconds)),
                "onExpiry": .string(station.onExpiry.rawValue),
            ])
        }
        for id in productIds {
            guard let product = index.productsById[id] else {
                rejected.append(["id": .string(id), "kind": "product", "reason": "unknown product"])
                continue
            }
            if let refusal = product.refusal {
                rejected.append([
                    "id": .string(id), "kind": "product", "reason": .string(refusal.userMessage),
                    "subStatus": .int(refusal.subStatus),
                ])
                continue
            }
            guard product.canBeDownloaded else {
                rejected.append(["id": .string(id), "kind": "product", "reason": "product may not be downloaded"])
                continue
            }
            products.append([
                "id": .string(id), "validUntil": .string(after(seconds: product.offlineValiditySeconds)),
                "revalidateAt": .string(after(seconds: product.revalidateSeconds)),
            ])
        }
        return ok(["stations": .array(stations), "products": .array(products), "rejected": .array(rejected)])
    }

    /// One offline item as docs/origin.md shows it, with a URL relative to the origin.
    func itemJSON(_ track: CatalogTrack) -> JSONValue? {
        guard let file = index.file(forTrack: track) else { return nil }
        return [
            "id": .string(track.id), "title": .string(track.title), "artist": .string(track.artist),
            "album": .string(track.album), "durationSeconds": .number(track.durationSeconds),
            "url": .string("/" + file.path), "sizeBytes": .int(file.sizeBytes), "sha256": .string(file.sha256),
            "mimeType": .string(file.mimeType), "audioQuality": .string(track.audioQuality),
            "replayGain": replayGainJSON(track.replayGain),
        ]
    }

    func replayGainJSON(_ gain: ReplayGain) -> JSONValue {
        [
            "trackGain": .number(gain.trackGain), "trackPeak": .number(gain.trackPeak),
            "albumGain": .number(gain.albumGain), "albumPeak": .number(gain.albumPeak),
        ]
    }

    /// SHA-256 over the ids and content hashes of what the device should hold, so the hash
    /// changes exactly when the wanted content does (and not when only `items` shrinks).
    func manifestHash(_ ids: [String]) -> String {
        let text = ids.map { id in "\(id):\(index.tracksById[id].flatMap(index.file(forTrack:))?.sha256 ?? "")" }
            .joined(separator: "\n")
        return ContentKeys.sha256(of: Array(text.utf8))
    }
}
