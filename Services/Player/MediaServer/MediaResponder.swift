import HLS
import HTTPClient
import HTTPRanges
import Logging
import NIOHTTP1
import OriginClient
import StateDB

/// Answers the local media server's requests from what the downloader put on disk:
///
/// - `/p/{productId}/master.m3u8` and the media playlists of an HLS product: the playlists as
///   the origin served them, every URI rewritten to this server (`/p/{productId}/{name}`) and
///   keys to `/p/{productId}/keys/{keyId}`; variants and renditions not offlined are left out,
///   and so are renditions being added to a presentation held until the product is `cached`
///   again (it plays on what it held meanwhile); a media playlist ends before its first segment
///   not yet verified, without `#EXT-X-ENDLIST` (a player sees a presentation still growing);
/// - segments, init sections, images and progressive files, with `Range` (a progressive file
///   still downloading is served as far as its bytes go);
/// - keys, only while `MediaServerStore.key` allows it;
/// - a product prepositioned in part (`partiallyCached`): its playlists whole, with
///   `#EXT-X-ENDLIST`, every segment listed; segments on disk are read from disk, the others
///   fetched from the origin with the player's credentials and relayed (a local player cannot
///   authenticate at the origin).
///
/// A product whose license or offline window has ended (`OFFLINED_BUT_NOT_VALID`, or a download
/// or partial product past them) is 403 `OfflineNotValid` on every path, judged by the rule the
/// engine plays by (`PlayableWindow`); an answer still being sent when that end comes is cut
/// there (`MediaResponse.cutAt`). Anything else unknown is 404.
///
/// A product and its rewritten playlists are kept between requests while the catalog does not
/// change (`MediaServerCache`); whether the product may be served is judged at every request.
struct MediaResponder: Sendable {
    /// The catalog opens after the player is ready; requests wait for it.
    let stores: @Sendable () async throws -> MediaServerStore
    let mediaDirectory: String
    let logger: Logger
    let cache: MediaServerCache
    /// Its newest server time counts in the trusted time a kept product is judged at.
    let origin: OriginClient?
    /// Bytes read and written at a time when sending a file.
    static let chunkBytes = 256 << 10

    func respond(to request: HTTPRequestHead) async -> MediaResponse {
        guard request.method == .GET || request.method == .HEAD else {
            return .error(.methodNotAllowed, "only GET and HEAD")
        }
        let path = Self.path(of: request)
        guard let parts = Self.parts(of: path) else { return .error(.notFound, "no such path") }
        let productId = parts[2]
        let name = parts[3...].joined(separator: "/")
        do {
            let store = try await stores()
            // Asked before the product is read: what is read is kept with this number.
            let version = cache.version()
            let product: MediaServerStore.ServedProduct
            if let kept = cache.product(productId, version: version) {
                product = kept.judgedNow(origin: origin)
            } else {
                guard let read = try await store.product(productId, name: parts.count == 5 && parts[3] == "keys" ? "" : name) else {
                    return .error(.notFound, "\(productId) is not on this device")
                }
                if read.listsEveryFile { cache.keep(read, for: productId, version: version) }
                product = read
            }
            if product.hasEnded { return .offlineNotValid(productId, endedAt: product.window.validity.until) }
            guard product.isServed else { return .error(.notFound, "\(productId) is not offlined") }
            var response = try await answer(
                name, parts: parts, of: product, store: store, version: version,
                range: request.headers.first(name: "Range"))
            // Whatever is still being sent when the license or offline window ends is cut there.
            response.cutAt = product.window.endsAt
            return response
        } catch is CancellationError {
            // The player is stopping.
            return .error(.serviceUnavailable, "the player is stopping")
        } catch {
            logger.warning("media server: \(path): \(error)")
            return .error(.internalServerError, "\(error)")
        }
    }

    /// The answer to `request` from what is kept, when that is all it needs: a playlist kept at
    /// the catalog's change count now, of a product that may be served now. Synchronous and
    /// without blocking, for the event loop; nil sends the request the long way (`respond`).
    func keptAnswer(to request: HTTPRequestHead) -> MediaResponse? {
        guard request.method == .GET || request.method == .HEAD, let parts = Self.parts(of: Self.path(of: request)) else { return nil }
        let productId = parts[2], name = parts[3...].joined(separator: "/")
        let version = cache.version()
        guard let body = cache.playlist(name, of: productId, version: version),
            let kept = cache.product(productId, version: version)
        else { return nil }
        let product = kept.judgedNow(origin: origin)
        guard !product.hasEnded, product.isServed else { return nil }
        var response = Self.playlistResponse(body)
        response.cutAt = product.window.endsAt
        return response
    }

    private static func path(of request: HTTPRequestHead) -> String {
        String(request.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
    }

    /// "", "p", productId, name...: nil for a path the server never serves.
    private static func parts(of path: String) -> [String]? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard parts.count >= 4, parts[0].isEmpty, parts[1] == "p", OriginID.isValid(parts[2]),
            parts[3...].allSatisfy(OriginID.isValid)
        else { return nil }
        return parts
    }

    /// The answer for a product that may be served now.
    private func answer(
        _ name: String, parts: [String], of product: MediaServerStore.ServedProduct,
        store: MediaServerStore, version: Int, range: String?
    ) async throws -> MediaResponse {
        let productId = parts[2]
        if parts.count == 5, parts[3] == "keys" {
            guard let key = try await store.key(productId: productId, keyId: parts[4]) else {
                return .error(.forbidden, "the key \(parts[4]) is served only while \(productId) is offlined and valid")
            }
            return MediaResponse(
                status: .ok, headers: [("Content-Type", "application/octet-stream"), ("Cache-Control", "no-store")],
                body: .bytes(key))
        }
        guard let file = product.file(named: name) else { return .error(.notFound, "\(productId) has no \(name)") }
        if product.isHLS, file.role == "main" || file.role == "playlist" {
            if let kept = cache.playlist(name, of: productId, version: version) { return Self.playlistResponse(kept) }
            let response = try await playlist(file, of: product)
            if response.status == .ok, case .bytes(let body) = response.body {
                cache.keep(playlist: body, named: name, of: productId, version: version)
            }
            return response
        }
        if product.isPartial, !file.isVerified {
            return try await relay(file, origin: store.origin, range: range)
        }
        return try await content(file, range: range)
    }

    /// A playlist with every URI pointing at this server.
    private func playlist(_ file: MediaServerStore.ServedFile, of product: MediaServerStore.ServedProduct) async throws -> MediaResponse {
        guard file.isVerified, let base = file.url else { return .error(.notFound, "\(file.name) is not downloaded yet") }
        let bytes = try await MediaFiles.readAll(mediaDirectory + "/" + file.localPath)
        guard let text = String(validating: bytes, as: UTF8.self) else { return .error(.internalServerError, "\(file.name) is not UTF-8") }
        let prefix = "/p/\(product.productId)/"
        let (rewritten, _) = HLSRewriter.rewrite(text) { uri, kind in
            guard let absolute = HLSURL.resolve(uri, against: base) else { return nil }
            let urlPath = HLSURL.path(of: absolute)
            if kind == .key {
                let keyPrefix = "/v1/keys/"
                guard urlPath.hasPrefix(keyPrefix) else { return nil }
                return prefix + "keys/" + urlPath.dropFirst(keyPrefix.count)
            }
            guard let target = product.file(urlPath: urlPath) else { return nil }
            switch kind {
            case .rendition where product.adding.contains(target.name):
                return nil // added to a presentation held: listed once all of it is on disk
            case .variant, .rendition:
                return prefix + target.name // listed: served as far as it is on disk
            case .segment, .map:
                return target.isVerified || product.isPartial ? prefix + target.name : nil
            case .iFramePlaylist, .key:
                return nil
            }
        }
        return Self.playlistResponse(Array(rewritten.utf8))
    }

    private static func playlistResponse(_ body: [UInt8]) -> MediaResponse {
        MediaResponse(
            status: .ok, headers: [("Content-Type", "application/vnd.apple.mpegurl"), ("Cache-Control", "no-store")],
            body: .bytes(body))
    }

    /// A file of a partial product that is not on disk, fetched whole from the origin (with the
    /// player's credentials) and answered as from disk, `Range` included. A file of the size
    /// the downloader listed is relayed only with that size; one whose size the downloader does
    /// not know yet (listed without asking the origin) with the length the origin's answer has.
    private func relay(_ file: MediaServerStore.ServedFile, origin: OriginClient?, range: String?) async throws -> MediaResponse {
        guard let origin, let stored = file.url else { return .error(.notFound, "\(file.name) is not on this device and no origin is configured") }
        if let listed = file.sizeBytes, listed > Self.maxRelayBytes {
            return .error(.badGateway, "\(file.name) has no size the server may relay")
        }
        let response: HTTPResponse
        do {
            response = try await origin.send(HTTPRequest(method: "GET", url: origin.mediaURL(stored), timeoutSeconds: 30), retry: Self.relayRetry)
        } catch {
            return .error(.badGateway, "\(file.name) is not on this device and the origin did not answer: \(error)")
        }
        let expected = file.sizeBytes ?? Int64(response.body.count)
        guard response.status == 200, Int64(response.body.count) == expected, expected > 0, expected <= Self.maxRelayBytes else {
            return .error(.badGateway, "\(file.name) is not on this device and the origin answered \(response.status) with \(response.body.count) bytes")
        }
        var headers: [(String, String)] = [("Content-Type", file.mimeType ?? "application/octet-stream"), ("Accept-Ranges", "bytes")]
        switch ByteRangeRequest.parse(range, size: expected) {
        case .whole:
            return MediaResponse(status: .ok, headers: headers, body: .bytes(response.body))
        case .range(let offset, let length):
            headers.append(("Content-Range", "bytes \(offset)-\(offset + length - 1)/\(expected)"))
            return MediaResponse(
                status: .partialContent, headers: headers,
                body: .bytes(Array(response.body[Int(offset)..<Int(offset + length)])))
        case .unsatisfiable:
            headers.append(("Content-Range", "bytes */\(expected)"))
            return MediaResponse(status: .rangeNotSatisfiable, headers: headers, body: .bytes([]))
        }
    }

    /// The largest file relayed from the origin (a segment; the whole file is held in memory):
    /// the origin client's bound on a body it keeps in memory.
    static let maxRelayBytes: Int64 = 16 << 20
    /// A player waits for the answer: a couple of quick retries only.
    static let relayRetry = RetryPolicy(statusRetries: 2, baseDelay: 0.2, maxStatusDelay: 1, networkRetries: 1, maxNetworkDelay: 1)

    /// A file's bytes, or the part of them `Range` asks for. A file still downloading is served
    /// as far as its `.part` holds.
    private func content(_ file: MediaServerStore.ServedFile, range: String?) async throws -> MediaResponse {
        let final = mediaDirectory + "/" + file.localPath
        let path: String
        let size: Int64
        if file.isVerified, let onDisk = await MediaFiles.size(final) {
            path = final
            size = onDisk
        } else if let onDisk = await MediaFiles.size(final + ".part"), file.role == "main" {
            path = final + ".part"
            size = min(onDisk, file.sizeBytes ?? onDisk)
        } else {
            return .error(.notFound, "\(file.name) is not downloaded yet")
        }
        var headers: [(String, String)] = [("Content-Type", file.mimeType ?? "application/octet-stream"), ("Accept-Ranges", "bytes")]
        switch ByteRangeRequest.parse(range, size: size) {
        case .whole:
            return MediaResponse(status: .ok, headers: headers, body: .file(path: path, offset: 0, length: size))
        case .range(let offset, let length):
            headers.append(("Content-Range", "bytes \(offset)-\(offset + length - 1)/\(file.isVerified ? String(size) : "*")"))
            return MediaResponse(status: .partialContent, headers: headers, body: .file(path: path, offset: offset, length: length))
        case .unsatisfiable:
            headers.append(("Content-Range", "bytes */\(size)"))
            return MediaResponse(status: .rangeNotSatisfiable, headers: headers, body: .bytes([]))
        }
    }
}
