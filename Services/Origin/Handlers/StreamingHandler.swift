import NIOHTTP1
import Wire

extension Origin {
    /// `POST /v1/stations/{id}/play` with `{"count"?,"played"?}`: the next items of a streaming
    /// station. Each station goes round its lineup (the catalog's tracks that belong to no offline
    /// station), from where its last answer stopped; `/_control/reset` starts every station over.
    func playStation(_ request: OriginRequest, stationId: String) -> OriginResponse {
        guard let station = index.stationsById[stationId] else { return notFound("Station \(stationId)", request) }
        guard !station.offline else {
            return error(
                .forbidden, subStatus: 4000,
                "Station \(stationId) is an offline station: sync it to the device and play it from there.",
                path: request.path)
        }
        let body: [String: JSONValue]
        switch objectBody(request, emptyAllowed: true) {
        case .success(let object): body = object
        case .failure(let failure): return failure.response
        }
        var count = 3
        if let value = body["count"], !value.isNull {
            guard let number = value.intValue, (1...OriginLimits.maxStationPlayCount).contains(number) else {
                return badRequest("count must be an integer from 1 to \(OriginLimits.maxStationPlayCount).", request)
            }
            count = number
        }
        guard JSONValue.strings(body["played"]) != nil else {
            return badRequest("played must be an array of item ids.", request)
        }
        let lineup = streamingLineup(stationId)
        guard !lineup.isEmpty else { return notFound("Items of station \(stationId)", request) }
        let start = stationCursors.withLock { cursors in
            let start = cursors[stationId, default: 0]
            cursors[stationId] = start + count
            return start
        }
        let items: [JSONValue] = (start..<start + count).map { position in
            let track = lineup[position % lineup.count]
            return [
                "id": .string(track.id), "productId": .string(track.id), "title": .string(track.title),
                "artist": .string(track.artist), "album": .string(track.album),
                "durationSeconds": .number(track.durationSeconds),
            ]
        }
        return ok(["station": ["id": .string(station.id), "name": .string(station.name)], "items": .array(items)])
    }

    /// Tracks that are a product of their own and belong to no offline station, in catalog order,
    /// turned so that each streaming station starts elsewhere.
    private func streamingLineup(_ stationId: String) -> [CatalogTrack] {
        let inStations = Set(index.catalog.stations.flatMap(\.trackIds))
        let tracks = index.catalog.tracks.filter {
            !inStations.contains($0.id) && index.productsById[$0.id]?.refusal == nil
                && index.productsById[$0.id] != nil && index.file(forTrack: $0) != nil
        }
        guard let offset = index.catalog.stations.filter({ !$0.offline }).firstIndex(where: { $0.id == stationId }),
            !tracks.isEmpty
        else { return tracks }
        let turn = offset % tracks.count
        return Array(tracks[turn...] + tracks[..<turn])
    }

    /// `POST /v1/streaming/sessions` with `{"deviceId","deviceName"}`: a session that takes the
    /// streaming privilege from whichever device held it.
    func startStreamingSession(_ request: OriginRequest) -> OriginResponse {
        let body: [String: JSONValue]
        switch objectBody(request, emptyAllowed: false) {
        case .success(let object): body = object
        case .failure(let failure): return failure.response
        }
        guard let deviceId = body["deviceId"]?.stringValue, !deviceId.isEmpty else {
            return badRequest("deviceId is required.", request)
        }
        let deviceName = body["deviceName"]?.stringValue ?? deviceId
        let session = streaming.start(deviceId: deviceId, deviceName: deviceName)
        return ok(["sessionId": .string(session.id), "heartbeatSeconds": .int(streaming.heartbeatSeconds)])
    }

    /// `POST /v1/streaming/sessions/{id}/heartbeat`: 200 while the session holds the privilege,
    /// 409 (4090) naming the device that took it.
    func streamingHeartbeat(_ request: OriginRequest, sessionId: String) -> OriginResponse {
        switch streaming.heartbeat(sessionId) {
        case .active:
            return ok(["active": .bool(true)])
        case .revoked(let other):
            return OriginResponse.json(
                .conflict,
                [
                    "status": .int(409), "subStatus": .int(4090), "serverTime": .string(serverTime), "otherDevice": .string(other),
                    "userMessage": .string("Streaming continues on \(other); only one device of the account streams at a time."),
                ])
        case .unknown:
            return notFound("Streaming session \(sessionId)", request)
        }
    }

    /// `DELETE /v1/streaming/sessions/{id}`.
    func endStreamingSession(_ request: OriginRequest, sessionId: String) -> OriginResponse {
        streaming.end(sessionId) ? ok(["ended": .bool(true)]) : notFound("Streaming session \(sessionId)", request)
    }

    /// `/_control/streaming` state: who holds the privilege, and how many sessions, heartbeats and ends.
    var streamingJSON: JSONValue {
        let state = streaming.snapshot
        return [
            "holder": state.holder.map {
                [
                    "sessionId": .string($0.id), "deviceId": .string($0.deviceId),
                    "deviceName": .string($0.deviceName),
                ]
            } ?? .null,
            "started": .int(state.started), "heartbeats": .int(state.heartbeats), "ended": .int(state.ended),
            "heartbeatSeconds": .int(streaming.heartbeatSeconds),
        ]
    }
}
