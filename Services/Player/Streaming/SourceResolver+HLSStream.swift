import Foundation
import HLS
import HTTPClient
import MediaDecoder
import OriginClient
import Wire

/// Streaming a TIDAL product delivered as HLS (`manifestType: hls`) that is not on the device:
/// the master playlist is fetched, a variant chosen by the streaming quality (`HLSStreamChoice`),
/// its audio playlist fetched (its default audio rendition's when it names one), the keys got
/// under a streaming license, and the segments become one `HLSByteSource` over
/// `StreamedHLSPieces`, as an offlined presentation does over its files.
extension SourceResolver {
    /// How long a streaming license is asked for: the keys must outlast any one playback.
    static let streamingLicenseSeconds = 6 * 3600

    func hlsStream(
        _ info: StreamInfo, quality: String?, origin: OriginClient,
        events: @escaping @Sendable (ByteSourceEvent) -> Void
    ) async throws -> PlaybackSource {
        let actual = info.context.actualProductId
        var playlistURL = info.url
        var context = info.context
        var playlist = try await fetchPlaylist(playlistURL, of: actual, origin: origin)
        if case .master(let master) = playlist {
            guard let variant = HLSStreamChoice.variant(of: master, quality: quality) else {
                throw SourceError.sourceUnavailable("the master playlist of \(actual) lists no variant")
            }
            let renditions = variant.audioGroup.map { master.renditions(.audio, group: $0) } ?? []
            let audio = (renditions.filter(\.isDefault) + renditions.filter { !$0.isDefault }).lazy.compactMap(\.uri).first
            playlistURL = try resolve(audio ?? variant.uri, against: playlistURL, of: actual)
            playlist = try await fetchPlaylist(playlistURL, of: actual, origin: origin)
            context.bitRate = variant.averageBandwidth ?? variant.bandwidth
            if HLSStreamChoice.isLossless(variant) {
                context.audioQuality = "LOSSLESS"
            } else if !["LOW", "HIGH"].contains(context.audioQuality ?? "") {
                context.audioQuality = "HIGH"
            }
            logger.debug("streaming \(actual): variant \(variant.bandwidth) b/s \(variant.codecs) for quality \(quality ?? "-")")
        }
        guard case .media(let media) = playlist else {
            throw SourceError.sourceUnavailable("the variant playlist of \(actual) is not a media playlist")
        }
        guard media.hasEndList else {
            throw SourceError.sourceUnavailable("\(actual) is a live HLS stream; the player streams complete (VOD) presentations only")
        }
        let keys = try await streamingKeys(media, base: playlistURL, info: info, origin: origin)
        var pieces: [HLSPiece] = []
        var lastMap: HLSMap?
        for segment in media.segments {
            var key: [UInt8]?
            var iv: [UInt8]?
            if let declared = segment.key {
                key = keys[try Self.keyId(declared.uri, base: playlistURL, of: actual)]
                iv = declared.iv ?? Self.sequenceIV(segment.sequence)
            }
            if let map = segment.map, map != lastMap {
                if key != nil && segment.key?.iv == nil {
                    throw SourceError.sourceUnavailable("\(actual) encrypts its init section without an explicit IV")
                }
                pieces.append(
                    HLSPiece(
                        path: try resolve(map.uri, against: playlistURL, of: actual), offset: map.byteRange?.offset ?? 0,
                        length: map.byteRange?.length, key: key, iv: iv, name: map.uri))
                lastMap = map
            }
            pieces.append(
                HLSPiece(
                    path: try resolve(segment.uri, against: playlistURL, of: actual),
                    offset: segment.byteRange?.offset ?? 0, length: segment.byteRange?.length,
                    key: key, iv: iv, name: segment.uri))
        }
        guard !pieces.isEmpty else { throw SourceError.sourceUnavailable("the playlist of \(actual) lists no segment") }
        logger.info("playing \(actual) from the HLS stream \(HLSURL.path(of: playlistURL)) (\(pieces.count) pieces)")
        let store = StreamedHLSPieces(pieces: pieces, origin: origin, events: events)
        return PlaybackSource(source: HLSByteSource(store: store), context: context)
    }

    /// A playlist on the origin, parsed; refusals and unusable answers are named errors.
    private func fetchPlaylist(_ url: String, of productId: String, origin: OriginClient) async throws -> HLSPlaylist {
        let response = try await origin.send(HTTPRequest(method: "GET", url: url, timeoutSeconds: 20), retry: .streaming)
        guard (200..<300).contains(response.status) else { throw OriginError(status: response.status, body: response.body) }
        do {
            return try HLSParser.parse(response.body)
        } catch {
            throw SourceError.sourceUnavailable("the playlist \(HLSURL.path(of: url)) of \(productId) does not parse: \(error)")
        }
    }

    /// `uri` made absolute against `base`, and kept on the origin.
    private func resolve(_ uri: String, against base: String, of productId: String) throws -> String {
        guard let absolute = HLSURL.resolve(uri, against: base) else {
            throw SourceError.sourceUnavailable("\(uri) in a playlist of \(productId) does not resolve")
        }
        return try origin?.resolveURL(absolute) ?? absolute
    }

    /// The AES-128 keys the playlist names, under a license asked for this playback
    /// (`POST /v1/licenses`, a rental of `streamingLicenseSeconds`): from its answer, else
    /// `GET /v1/keys/{keyId}` with `X-License`. No key, no license asked.
    private func streamingKeys(
        _ media: HLSMediaPlaylist, base: String, info: StreamInfo,
        origin: OriginClient
    ) async throws -> [String: [UInt8]] {
        let actual = info.context.actualProductId
        var keyIds: [String] = []
        for segment in media.segments {
            guard let key = segment.key else { continue }
            guard key.method == .aes128 else {
                throw SourceError.sourceUnavailable("\(actual) uses \(key.method.rawValue) encryption; the player decrypts AES-128 only")
            }
            let id = try Self.keyId(key.uri, base: base, of: actual)
            if !keyIds.contains(id) { keyIds.append(id) }
        }
        guard !keyIds.isEmpty else { return [:] }
        let body: JSONValue = [
            "productId": .string(info.context.requestedProductId), "kind": "rental",
            "rentalSeconds": .number(Double(Self.streamingLicenseSeconds)),
            "securityToken": info.securityToken.map(JSONValue.string) ?? .null,
        ]
        let answer = try await origin.post("/v1/licenses", body: body, retry: .streaming)
        guard let licenseId = answer["licenseId"]?.stringValue, OriginID.isValid(licenseId) else {
            throw SourceError.sourceUnavailable("the license answer for \(actual) has no usable licenseId")
        }
        var keys: [String: [UInt8]] = [:]
        for (keyId, value) in answer["keys"]?.objectValue ?? [:] {
            if let text = value.stringValue, let data = Data(base64Encoded: text), data.count == 16 { keys[keyId] = Array(data) }
        }
        for keyId in keyIds where keys[keyId] == nil {
            let request = HTTPRequest(method: "GET", url: try origin.resolveURL("/v1/keys/\(keyId)"), headers: ["X-License": licenseId])
            let response = try await origin.send(request, retry: .streaming)
            guard (200..<300).contains(response.status) else { throw OriginError(status: response.status, body: response.body) }
            guard response.body.count == 16 else {
                throw SourceError.sourceUnavailable("key \(keyId) of \(actual) is \(response.body.count) bytes, not 16")
            }
            keys[keyId] = response.body
        }
        return keys
    }
}
