import Foundation
import MediaDecoder
import NIOConcurrencyHelpers
import OriginClient
import StateDB
import Wire

/// A product made playable: what is being played, and how to open its decoder on the decode thread.
struct ResolvedTrack: Sendable {
    var info: TrackInfo
    /// Opens a decoder from the start of the bytes (on the decode thread). Called again to restart the track.
    var open: @Sendable () throws -> AudioDecoder
    /// Gives the bytes up: unblocks a decoder waiting for bytes that may never come. Idempotent.
    var close: @Sendable () -> Void

    func job(_ token: TrackToken, at position: Double = 0) -> TrackJob {
        TrackJob(
            token: token, startPosition: position,
            loudness: LoudnessTags(
                trackGain: info.trackGain, trackPeak: info.trackPeak,
                albumGain: info.albumGain, albumPeak: info.albumPeak),
            open: open)
    }
}

/// Turns a requested product into a `ResolvedTrack`: the one place that decides where bytes
/// come from. Throws errors with stable names (they become the error event before IDLE).
protocol TrackSource: Sendable {
    func resolve(
        productId: String, offlineMode: Bool, quality: String?,
        events: @escaping @Sendable (ByteSourceEvent) -> Void
    ) async throws -> ResolvedTrack

    /// Whether `productId`, played from the device, may still be played, and until when.
    func window(productId: String) async throws -> PlayableWindow
}

/// The output format asked of the decoder: the device gets 16-bit for 16-bit (and lossy)
/// sources and 32-bit for deeper ones, so nothing is lost and a 16-bit capture equals the
/// decoded file bit for bit.
func decoderOutput(bitDepth: Int?) -> DecoderOutputFormat {
    DecoderOutputFormat(sampleFormat: (bitDepth ?? 16) > 16 ? .s32 : .s16)
}

/// The TIDAL source-selection table (the streaming part's `SourceResolver`), made once the
/// catalog is open: the local file when offlined and valid (no network at all), the growing
/// file while it downloads, else the origin's stream.
final class ResolverTrackSource: TrackSource {
    private let catalog: @Sendable () async throws -> StateDB
    private let mediaDirectory: String
    private let origin: OriginClient?
    private let cache: HTTPCache?
    private let resolver = NIOLockedValueBox<SourceResolver?>(nil)

    init(catalog: @escaping @Sendable () async throws -> StateDB, mediaDirectory: String, origin: OriginClient?, cache: HTTPCache?) {
        self.catalog = catalog
        self.mediaDirectory = mediaDirectory
        self.origin = origin
        self.cache = cache
    }

    private func sourceResolver() async throws -> SourceResolver {
        if let made = resolver.withLockedValue({ $0 }) { return made }
        let made = SourceResolver(catalog: try await catalog(), mediaDirectory: mediaDirectory, origin: origin, cache: cache)
        return resolver.withLockedValue { existing in
            if let existing { return existing }
            existing = made
            return made
        }
    }

    func resolve(
        productId: String, offlineMode: Bool, quality: String?,
        events: @escaping @Sendable (ByteSourceEvent) -> Void
    ) async throws -> ResolvedTrack {
        let resolved = try await sourceResolver().resolve(
            productId: productId, quality: quality,
            offlineMode: offlineMode, events: events)
        let context = resolved.context
        let info = TrackInfo(
            requestedProductId: context.requestedProductId, actualProductId: context.actualProductId,
            audioQuality: context.audioQuality, codec: context.codec, sampleRate: context.sampleRate,
            bitDepth: context.bitDepth, durationSeconds: context.durationSeconds,
            trackGain: context.trackGain, trackPeak: context.trackPeak,
            albumGain: context.albumGain, albumPeak: context.albumPeak, offline: context.offline,
            display: context.display, bitRate: context.bitRate, videoQuality: context.videoQuality)
        let source = resolved.source
        let output = decoderOutput(bitDepth: context.bitDepth)
        let actual = context.actualProductId
        return ResolvedTrack(
            info: info,
            open: {
                do {
                    try source.seek(to: 0)
                    return try AudioDecoder(source: source, output: output)
                } catch let error as DecoderError {
                    throw PlayerError.from(decoder: error, productId: actual)
                }
            }, close: { source.close() })
    }

    func window(productId: String) async throws -> PlayableWindow {
        try await sourceResolver().window(productId: productId)
    }
}

extension PlayerError {
    /// A decoder failure in the player's own names: a missing file, or one that cannot be played.
    /// A failure of the bytes underneath (download failed, stream gone) keeps the source's name.
    static func from(decoder error: DecoderError, productId: String) -> any Error {
        if error.code == .fileNotFound {
            return PlayerError(.fileMissing, "The file of \(productId) is missing: \(error.message)")
        }
        if let underlying = error.sourceError as? RPCErrorConvertible {
            return underlying.rpcError
        }
        if let underlying = error.sourceError as? ByteSourceError {
            return RPCError(code: Code.sourceFailed.number, name: underlying.name, message: underlying.message)
        }
        return PlayerError(.corruptFile, "The file of \(productId) cannot be played (\(error.name)): \(error.message)")
    }
}
