import Foundation
import NIOHTTP1
import Synchronization
import Wire

extension Origin {
    /// `GET /v1/playbackinfo/{productId}?mode=offline|stream&quality=…`.
    ///
    /// A product may be delivered as another track (a replacement: `productId` differs from
    /// `requestedProductId`), refused (403 with its subStatus, e.g. 4032 geo-blocked) or be
    /// playable but not downloadable (`canBeDownloaded: false`, answered in both modes so the
    /// client, not the origin, decides what to do with it).
    func playbackInfo(_ request: OriginRequest, productId: String) -> OriginResponse {
        let mode = request.query["mode"] ?? "stream"
        guard mode == "offline" || mode == "stream" else {
            return badRequest("mode must be offline or stream.", request)
        }
        stats.countQuality(mode: mode, request.query["quality"])
        guard let product = index.productsById[productId] else { return notFound("Product \(productId)", request) }
        if let refusal = product.refusal {
            return error(
                HTTPResponseStatus(statusCode: refusal.status), subStatus: refusal.subStatus,
                refusal.userMessage, path: request.path)
        }
        var body: [String: JSONValue] = [
            "requestedProductId": .string(productId),
            "productType": .string(product.productType),
            "assetPresentation": "FULL",
            "audioMode": "STEREO",
            "offlineRevalidateAt": .string(after(seconds: product.revalidateSeconds)),
            "offlineValidUntil": .string(after(seconds: product.offlineValiditySeconds)),
            "licenseSecurityToken": .optional(product.licenseSecurityToken),
            "canBeDownloaded": .bool(product.canBeDownloaded),
            "mode": .string(mode),
        ]
        if let quality = request.query["quality"] { body["requestedQuality"] = .string(quality) }
        var images: [String: JSONValue] = [:]
        if let poster = product.poster { images["poster"] = .string("/" + poster) }
        if let thumbnail = product.thumbnail { images["thumbnail"] = .string("/" + thumbnail) }
        if !images.isEmpty { body["images"] = .object(images) }

        if product.hls != nil {
            let delivered = redeliveries.withLock { $0[productId] }.flatMap { index.productsById[$0] } ?? product
            guard let hls = delivered.hls, let master = index.filesByPath[hls.master] else {
                return notFound("Manifest of \(productId)", request)
            }
            body["productId"] = .string(delivered.id)
            body["title"] = .string(delivered.presentationTitle)
            body["manifestType"] = "hls"
            body["manifest"] = [
                "url": .string("/" + master.path), "sizeBytes": .int(hls.sizeBytes),
                "sha256": .string(master.sha256), "mimeType": .string(master.mimeType),
            ]
            body["manifestHash"] = .string(ContentKeys.sha256(of: Array("\(delivered.id):\(master.sha256)".utf8)))
            body["keyIds"] = .array(hls.keyIds.map(JSONValue.string))
            body["codec"] = .string(hls.codec)
            body["audioQuality"] = .string(hls.audioQuality)
            body["sampleRate"] = .int(hls.sampleRate)
            body["bitDepth"] = hls.bitDepth.map(JSONValue.int) ?? .null
            body["durationSeconds"] = .number(hls.durationSeconds)
            body["replayGain"] = .null
            return ok(body)
        }
        let redelivered = redeliveries.withLock { $0[productId] }.flatMap { index.tracksById[$0] }
        guard let trackId = product.trackId, let track = index.tracksById[trackId],
            let file = index.file(forTrack: redelivered ?? track)
        else { return notFound("Media of \(productId)", request) }
        body["productId"] = .string(track.id)
        body["title"] = .string(track.title)
        body["artist"] = .string(track.artist)
        body["album"] = .string(track.album)
        body["manifestType"] = "progressive"
        body["manifest"] = [
            "url": .string("/" + file.path), "sizeBytes": .int(file.sizeBytes),
            "sha256": .string(file.sha256), "mimeType": .string(file.mimeType),
        ]
        body["manifestHash"] = .string(ContentKeys.sha256(of: Array("\(track.id):\(file.sha256)".utf8)))
        body["codec"] = .string(track.codec)
        body["audioQuality"] = .string(track.audioQuality)
        body["sampleRate"] = .int(track.sampleRate)
        body["bitDepth"] = track.bitDepth.map(JSONValue.int) ?? .null
        body["durationSeconds"] = .number(track.durationSeconds)
        body["replayGain"] = replayGainJSON(track.replayGain)
        return ok(body)
    }

    /// `POST /v1/licenses`: a purchase (no expiry) or a rental whose clock starts now.
    func grantLicense(_ request: OriginRequest) async -> OriginResponse {
        let body: [String: JSONValue]
        switch objectBody(request, emptyAllowed: false) {
        case .success(let object): body = object
        case .failure(let failure): return failure.response
        }
        guard let productId = body["productId"]?.stringValue else { return badRequest("productId is required.", request) }
        let kind = body["kind"]?.stringValue ?? "purchase"
        guard kind == "purchase" || kind == "rental" else { return badRequest("kind must be purchase or rental.", request) }
        var rentalSeconds = OriginLimits.defaultRentalSeconds
        if let value = body["rentalSeconds"], !value.isNull {
            guard let seconds = value.intValue, seconds > 0 else {
                return badRequest("rentalSeconds must be a positive integer.", request)
            }
            rentalSeconds = seconds
        }
        guard let product = index.productsById[productId] else { return notFound("Product \(productId)", request) }
        if let refusal = product.refusal {
            return error(
                HTTPResponseStatus(statusCode: refusal.status), subStatus: refusal.subStatus,
                refusal.userMessage, path: request.path)
        }
        if let expected = product.licenseSecurityToken, body["securityToken"]?.stringValue != expected {
            return error(.forbidden, subStatus: 4031, "The security token does not match the product.", path: request.path)
        }
        let keyIds = product.hls?.keyIds ?? []
        let license: License
        do {
            license = try await licenses.grant(
                productId: productId, kind: kind, rentalSeconds: rentalSeconds,
                keyIds: keyIds, now: clock.now())
        } catch {
            return self.error(.internalServerError, subStatus: 5000, "Cannot record the license: \(error)", path: request.path)
        }
        var keys: [String: JSONValue] = [:]
        for keyId in keyIds { keys[keyId] = .string(Data(ContentKeys.key(for: keyId)).base64EncodedString()) }
        return ok([
            "licenseId": .string(license.id), "productId": .string(productId), "kind": .string(kind),
            "expiresAt": .optional(license.expiresAt.map(ServerClock.rfc3339)), "keys": .object(keys),
        ])
    }

    /// `GET /v1/keys/{keyId}` with `X-License`: the 16 raw key bytes, only under a license
    /// that covers the key and has not expired on the server clock.
    func serveKey(_ request: OriginRequest, keyId: String, ignoreRange: Bool) async -> OriginResponse {
        guard let licenseId = request.headers.first(name: "x-license"), !licenseId.isEmpty else {
            return error(.forbidden, subStatus: 4030, "A license (X-License) is required for keys.", path: request.path)
        }
        guard let license = await licenses.license(licenseId), license.keyIds.contains(keyId) else {
            return error(.forbidden, subStatus: 4030, "The license does not cover key \(keyId).", path: request.path)
        }
        if let expiry = license.expiresAt, clock.now() >= expiry {
            return error(
                .forbidden, subStatus: 4034, "The license expired at \(ServerClock.rfc3339(expiry)).",
                path: request.path)
        }
        let key = ContentKeys.key(for: keyId)
        return serveBytes(
            request, body: .bytes(key), size: key.count, etag: ContentKeys.sha256(of: key),
            mimeType: "application/octet-stream", ignoreRange: ignoreRange, cacheable: false)
    }
}
