import NIOHTTP1
import Synchronization
import Wire

extension Origin {
    /// The test-control endpoints under `/_control/` (no auth, never faulted, not counted).
    ///
    /// - `GET /_control/stats`, `GET /_control/health`
    /// - `GET|POST|DELETE /_control/faults` with `{"path":"/v1/plays","faults":[FAULT,…]}`
    /// - `GET|POST|DELETE /_control/head` with `{"status":403}`: every `HEAD` of a media file,
    ///   image or key is answered with that status (an edge of GET-only signed URLs) until
    ///   DELETE, `DELETE /_control/faults` or a reset
    /// - `POST /_control/reset`: forgets plays, consumption, metrics, request counts and faults, puts
    ///   the demo content catalog back, and sets the clock offset back to zero
    /// - `GET|POST /_control/clock` with `{"offsetSeconds":n}`
    /// - `GET|POST|DELETE /_control/redeliver` with `{"productId":"tr-1","trackId":"tr-2"}`: the
    ///   product is now delivered with that track's file (a new `manifestHash`), or for an HLS
    ///   product `{"productId":"tr-hls","presentationOf":"tr-hls-2"}`, with that product's
    ///   presentation; DELETE undoes all
    /// - `GET|POST /_control/catalog/items`, `DELETE /_control/catalog/items/{id}`: the content
    ///   catalog's items (`controlContentCatalog`); the request count of `/v1/catalog/items` is
    ///   in `stats.requests`, the items and removals it answered in `stats.catalogItemsServed`
    /// - `GET /_control/streaming`: who holds the streaming privilege, sessions started, heartbeats
    /// - `POST /_control/takeover` with `{"deviceName":"Kitchen speaker"}`: another device of the
    ///   account starts streaming, taking the privilege from the session that held it
    func control(_ request: OriginRequest, segments: [String]) async -> OriginResponse {
        if segments.first == "catalog" { return controlContentCatalog(request, segments: Array(segments.dropFirst())) }
        guard segments.count == 1 else { return notFound("Control endpoint", request) }
        switch (request.method, segments[0]) {
        case (.GET, "health"):
            return ok(["ok": true])
        case (.GET, "stats"):
            return ok([
                "plays": await plays.stats, "consumption": await consumption.stats, "metrics": await metrics.stats,
                "requests": stats.json,
                "methods": stats.methodsJSON, "media": stats.mediaJSON,
                "catalogItemsServed": .int(stats.catalogItemsServed),
                "playbackInfoQualities": stats.qualitiesJSON,
                "clockOffsetSeconds": .number(clock.offsetSeconds),
            ])
        case (.GET, "faults"):
            return ok(["pending": faults.pending])
        case (.DELETE, "faults"):
            faults.clear()
            return ok(["pending": faults.pending])
        case (.POST, "faults"):
            return queueFaults(request)
        case (.GET, "head"):
            return ok(["head": faults.headRefusalJSON])
        case (.DELETE, "head"):
            faults.refuseHead(with: nil)
            return ok(["head": faults.headRefusalJSON])
        case (.POST, "head"):
            let body: [String: JSONValue]
            switch objectBody(request, emptyAllowed: true) {
            case .success(let object): body = object
            case .failure(let failure): return failure.response
            }
            let status = body["status"].map { $0.intValue } ?? 403
            guard let status, (400...599).contains(status) else { return badRequest("status must be 400…599.", request) }
            faults.refuseHead(with: status)
            return ok(["head": faults.headRefusalJSON])
        case (.POST, "reset"):
            faults.clear()
            stats.reset()
            clock.setOffset(0)
            redeliveries.withLock { $0.removeAll() }
            let demoFeed = ContentFeed.demo(index)
            contentFeed.withLock { $0 = demoFeed }
            stationCursors.withLock { $0.removeAll() }
            streaming.reset()
            do {
                try await plays.reset()
                try await consumption.reset()
                try await metrics.reset()
            } catch {
                return self.error(.internalServerError, subStatus: 5000, "Cannot reset: \(error)", path: request.path)
            }
            return ok(["reset": true])
        case (.GET, "clock"):
            return ok(["offsetSeconds": .number(clock.offsetSeconds)])
        case (.POST, "clock"):
            let body: [String: JSONValue]
            switch objectBody(request, emptyAllowed: false) {
            case .success(let object): body = object
            case .failure(let failure): return failure.response
            }
            guard let offset = body["offsetSeconds"]?.doubleValue, offset.isFinite else {
                return badRequest("offsetSeconds must be a number.", request)
            }
            clock.setOffset(offset)
            return ok(["offsetSeconds": .number(offset)])
        case (.GET, "redeliver"):
            return ok(["redeliveries": redeliveriesJSON])
        case (.DELETE, "redeliver"):
            redeliveries.withLock { $0.removeAll() }
            return ok(["redeliveries": redeliveriesJSON])
        case (.POST, "redeliver"):
            return redeliver(request)
        case (.GET, "streaming"):
            return ok(["streaming": streamingJSON])
        case (.POST, "takeover"):
            let body: [String: JSONValue]
            switch objectBody(request, emptyAllowed: true) {
            case .success(let object): body = object
            case .failure(let failure): return failure.response
            }
            let name = body["deviceName"]?.stringValue ?? "Another device"
            _ = streaming.start(deviceId: "other-" + name, deviceName: name)
            return ok(["streaming": streamingJSON])
        case (_, "health"), (_, "stats"), (_, "faults"), (_, "head"), (_, "reset"), (_, "clock"), (_, "redeliver"), (_, "streaming"),
            (_, "takeover"):
            return methodNotAllowed(request, "see /_control/ documentation")
        default:
            return notFound("Control endpoint", request)
        }
    }

    private var redeliveriesJSON: JSONValue {
        .object(redeliveries.withLock { $0 }.mapValues(JSONValue.string))
    }

    private func redeliver(_ request: OriginRequest) -> OriginResponse {
        let body: [String: JSONValue]
        switch objectBody(request, emptyAllowed: false) {
        case .success(let object): body = object
        case .failure(let failure): return failure.response
        }
        guard let productId = body["productId"]?.stringValue, let product = index.productsById[productId] else {
            return badRequest("productId must name a product.", request)
        }
        if product.hls != nil {
            guard let other = body["presentationOf"]?.stringValue, index.productsById[other]?.hls != nil else {
                return badRequest("presentationOf must name another HLS product.", request)
            }
            redeliveries.withLock { $0[productId] = other }
            return ok(["redeliveries": redeliveriesJSON])
        }
        guard product.trackId != nil else { return badRequest("productId must name a progressive or HLS product.", request) }
        guard let trackId = body["trackId"]?.stringValue, let track = index.tracksById[trackId],
            index.file(forTrack: track) != nil
        else {
            return badRequest("trackId must name a track with a media file.", request)
        }
        redeliveries.withLock { $0[productId] = trackId }
        return ok(["redeliveries": redeliveriesJSON])
    }

    private func queueFaults(_ request: OriginRequest) -> OriginResponse {
        let body: [String: JSONValue]
        switch objectBody(request, emptyAllowed: false) {
        case .success(let object): body = object
        case .failure(let failure): return failure.response
        }
        guard let path = body["path"]?.stringValue, path.hasPrefix("/") else {
            return badRequest("path must be a path prefix starting with /.", request)
        }
        guard let list = body["faults"]?.arrayValue ?? body["fault"].map({ [$0] }) else {
            return badRequest("faults must be an array of fault objects.", request)
        }
        do {
            let parsed = try list.map { try Fault(json: $0) }
            faults.enqueue(prefix: path, faults: parsed)
            return ok(["queued": .int(parsed.count), "pending": faults.pending])
        } catch let failure as FaultError {
            return badRequest(failure.message, request)
        } catch {
            return badRequest("\(error)", request)
        }
    }
}
