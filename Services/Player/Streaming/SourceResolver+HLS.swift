import HLS
import MediaDecoder
import OriginClient
import StateDB

/// Offlined HLS presentations (TIDAL tracks with `manifestType: hls`, or the audio of a video):
/// the playlists the downloader kept are read again, and their segments become one
/// `HLSByteSource`, decrypted with the keys the catalog holds under the product's license.
extension SourceResolver {
    /// The audio of the offlined presentation of `local`: the offlined audio rendition of the
    /// offlined variant (the default one first) when the variant names an audio group with its
    /// own playlist, else the variant itself. Every piece must be verified on disk.
    ///
    /// Its bit rate is that playlist's (`HLSMediaPlaylist.averageBitRate`, from the sizes of the
    /// files on disk), not the whole presentation's with the variants and renditions not played.
    func hlsSource(
        requested productId: String, local: OfflineAvailability.LocalFile,
        metadata: SourceStore.LocalMetadata
    ) async throws -> PlaybackSource {
        let store = MediaServerStore(catalog: catalog, origin: origin)
        guard let product = try await store.product(productId) else { throw SourceError.notOfflined(productId) }
        let actual = product.productId
        let playlistFile = try await audioPlaylist(of: product)
        guard case .media(let playlist) = try await parse(playlistFile, of: actual) else {
            throw SourceError.sourceUnavailable("\(playlistFile.name) of \(actual) is not a media playlist")
        }
        guard playlist.hasEndList, let base = playlistFile.url else {
            throw SourceError.sourceUnavailable("\(playlistFile.name) of \(actual) is not a complete presentation")
        }
        var keys: [String: [UInt8]] = [:]
        var pieces: [HLSPiece] = []
        var lastMap: HLSMap?
        for segment in playlist.segments {
            var key: [UInt8]?
            var iv: [UInt8]?
            if let declared = segment.key {
                guard declared.method == .aes128 else {
                    throw SourceError.sourceUnavailable("\(actual) uses \(declared.method.rawValue) encryption; the player decrypts AES-128 only")
                }
                let keyId = try Self.keyId(declared.uri, base: base, of: actual)
                if keys[keyId] == nil {
                    guard let bytes = try await store.key(productId: productId, keyId: keyId) else {
                        throw SourceError.offlineNotValid(productId)
                    }
                    keys[keyId] = bytes
                }
                key = keys[keyId]
                iv = declared.iv ?? Self.sequenceIV(segment.sequence)
            }
            if let map = segment.map, map != lastMap {
                if key != nil && segment.key?.iv == nil {
                    throw SourceError.sourceUnavailable("\(actual) encrypts its init section without an explicit IV")
                }
                pieces.append(try piece(map.uri, range: map.byteRange, base: base, key: key, iv: iv, of: product))
                lastMap = map
            }
            pieces.append(try piece(segment.uri, range: segment.byteRange, base: base, key: key, iv: iv, of: product))
        }
        guard !pieces.isEmpty else { throw SourceError.sourceUnavailable("\(playlistFile.name) of \(actual) lists no segment") }
        var context = Self.context(productId, local, metadata)
        context.bitRate = playlist.averageBitRate { uri in
            HLSURL.resolve(uri, against: base).flatMap { product.file(urlPath: HLSURL.path(of: $0)) }.map { $0.sizeBytes ?? $0.bytesOnDisk }
        }
        logger.info("playing \(actual) from the offlined HLS playlist \(playlistFile.name) (\(pieces.count) pieces)")
        return PlaybackSource(source: HLSByteSource(pieces: pieces), context: context)
    }

    /// The media playlist whose audio is played.
    private func audioPlaylist(of product: MediaServerStore.ServedProduct) async throws -> MediaServerStore.ServedFile {
        let master: HLSMasterPlaylist
        switch try await parse(product.main, of: product.productId) {
        case .media:
            return product.main
        case .master(let parsed):
            master = parsed
        }
        guard let base = product.main.url else {
            throw SourceError.sourceUnavailable("the catalog has no origin URL for the master playlist of \(product.productId)")
        }
        func offlined(_ uri: String?) -> MediaServerStore.ServedFile? {
            guard let uri, let absolute = HLSURL.resolve(uri, against: base),
                let file = product.file(urlPath: HLSURL.path(of: absolute)), file.isVerified
            else { return nil }
            return file
        }
        for variant in master.variants {
            guard let variantFile = offlined(variant.uri) else { continue }
            let renditions = variant.audioGroup.map { master.renditions(.audio, group: $0) } ?? []
            let ordered = renditions.filter(\.isDefault) + renditions.filter { !$0.isDefault }
            return ordered.lazy.compactMap { offlined($0.uri) }.first ?? variantFile
        }
        throw SourceError.sourceUnavailable("no variant of \(product.productId) is offlined")
    }

    private func parse(_ file: MediaServerStore.ServedFile, of productId: String) async throws -> HLSPlaylist {
        guard file.isVerified else { throw SourceError.sourceUnavailable("\(file.name) of \(productId) is not downloaded") }
        let bytes: [UInt8]
        do {
            bytes = try await MediaFiles.readAll(try absolutePath(file.localPath))
        } catch let error as SourceError {
            throw error
        } catch {
            throw PlayerError(.fileMissing, "the offlined playlist \(file.name) of \(productId) cannot be read: \(error)")
        }
        do {
            return try HLSParser.parse(bytes)
        } catch {
            throw SourceError.sourceUnavailable("the offlined playlist \(file.name) of \(productId) does not parse: \(error)")
        }
    }

    private func piece(
        _ uri: String, range: HLSByteRange?, base: String, key: [UInt8]?, iv: [UInt8]?,
        of product: MediaServerStore.ServedProduct
    ) throws -> HLSPiece {
        guard let absolute = HLSURL.resolve(uri, against: base),
            let file = product.file(urlPath: HLSURL.path(of: absolute))
        else {
            throw SourceError.sourceUnavailable("\(uri) of \(product.productId) is not in the catalog")
        }
        guard file.isVerified else {
            throw SourceError.sourceUnavailable("\(file.name) of \(product.productId) is not downloaded")
        }
        return HLSPiece(
            path: try absolutePath(file.localPath), offset: range?.offset ?? 0, length: range?.length,
            key: key, iv: iv, name: file.name)
    }

    /// `/v1/keys/{keyId}` (ORIGIN-API's key URL) resolved against the playlist.
    static func keyId(_ uri: String, base: String, of productId: String) throws -> String {
        let prefix = "/v1/keys/"
        guard let absolute = HLSURL.resolve(uri, against: base) else {
            throw SourceError.sourceUnavailable("the key URI \(uri) of \(productId) does not resolve")
        }
        let path = HLSURL.path(of: absolute)
        guard path.hasPrefix(prefix), OriginID.isValid(String(path.dropFirst(prefix.count))) else {
            throw SourceError.sourceUnavailable("the key URI \(uri) of \(productId) is not an origin key")
        }
        return String(path.dropFirst(prefix.count))
    }

    /// RFC 8216 5.2: without an `IV` attribute, the IV is the segment's media sequence number
    /// as a 128-bit big-endian integer.
    static func sequenceIV(_ sequence: Int) -> [UInt8] {
        [UInt8](repeating: 0, count: 8) + (0..<8).reversed().map { UInt8(truncatingIfNeeded: UInt64(sequence) >> (8 * $0)) }
    }
}
