import NIOHTTP1

extension Origin {
    /// Routes one request. Never throws: every failure becomes an error answer, so bad
    /// input cannot take the origin down.
    func respond(to request: OriginRequest, ignoreRange: Bool) async -> OriginResponse {
        let segments = request.segments
        guard let root = segments.first else { return notFound("Resource", request) }
        switch root {
        case "_control":
            return await control(request, segments: Array(segments.dropFirst()))
        case "media", "img":
            guard request.method == .GET || request.method == .HEAD else { return methodNotAllowed(request, "GET, HEAD") }
            return serveFile(request, ignoreRange: ignoreRange)
        case "v1":
            guard isAuthorized(request) else {
                var response = error(.unauthorized, subStatus: 6001, "Missing or wrong client credentials.", path: request.path)
                response.headers.add(name: "WWW-Authenticate", value: "Basic realm=\"cassette\"")
                return response
            }
            return await api(request, segments: Array(segments.dropFirst()), ignoreRange: ignoreRange)
        default:
            return notFound("Resource", request)
        }
    }

    private func api(_ request: OriginRequest, segments: [String], ignoreRange: Bool) async -> OriginResponse {
        let method = request.method
        switch segments.count {
        case 1:
            switch segments[0] {
            case "stations":
                return method == .GET ? listStations(request) : methodNotAllowed(request, "GET")
            case "licenses":
                return method == .POST ? await grantLicense(request) : methodNotAllowed(request, "POST")
            case "plays":
                return method == .POST ? await ingest(request, into: plays) : methodNotAllowed(request, "POST")
            case "consumption":
                return method == .POST ? await ingest(request, into: consumption) : methodNotAllowed(request, "POST")
            case "metrics":
                return method == .POST ? await ingest(request, into: metrics) : methodNotAllowed(request, "POST")
            default:
                break
            }
        case 2 where segments[0] == "streaming" && segments[1] == "sessions":
            return method == .POST ? startStreamingSession(request) : methodNotAllowed(request, "POST")
        case 3 where segments[0] == "streaming" && segments[1] == "sessions":
            return method == .DELETE ? endStreamingSession(request, sessionId: segments[2]) : methodNotAllowed(request, "DELETE")
        case 4 where segments[0] == "streaming" && segments[1] == "sessions" && segments[3] == "heartbeat":
            return method == .POST ? streamingHeartbeat(request, sessionId: segments[2]) : methodNotAllowed(request, "POST")
        case 3 where segments[0] == "stations" && segments[2] == "play":
            return method == .POST ? playStation(request, stationId: segments[1]) : methodNotAllowed(request, "POST")
        case 2:
            switch segments[0] {
            case "playbackinfo":
                return method == .GET ? playbackInfo(request, productId: segments[1]) : methodNotAllowed(request, "GET")
            case "keys":
                guard method == .GET || method == .HEAD else { return methodNotAllowed(request, "GET, HEAD") }
                return await serveKey(request, keyId: segments[1], ignoreRange: ignoreRange)
            case "catalog":
                return contentCatalog(request, resource: segments[1])
            case "offline" where segments[1] == "extend":
                return method == .POST ? extendOffline(request) : methodNotAllowed(request, "POST")
            default:
                break
            }
        case 3 where segments[0] == "stations" && segments[2] == "offline":
            return method == .POST ? syncStation(request, stationId: segments[1]) : methodNotAllowed(request, "POST")
        default:
            break
        }
        return notFound("Resource", request)
    }

    func methodNotAllowed(_ request: OriginRequest, _ allowed: String) -> OriginResponse {
        var response = error(.methodNotAllowed, subStatus: 4050, "Use \(allowed) here.", path: request.path)
        response.headers.add(name: "Allow", value: allowed)
        return response
    }
}
