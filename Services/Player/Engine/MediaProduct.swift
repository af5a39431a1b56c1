import Foundation
import Wire

/// TIDAL's `MediaProduct` as a client sends it; looped back unchanged in events and status.
struct MediaProduct: Codable, Sendable, Equatable {
    var productType: String?
    var productId: String
    /// Unique per instance; lets the app match events to the product it asked for.
    var referenceId: String?
    var sourceType: String?
    var sourceId: String?
    var extras: JSONValue?

    init(
        productId: String, productType: String? = "TRACK", referenceId: String? = nil,
        sourceType: String? = nil, sourceId: String? = nil, extras: JSONValue? = nil
    ) {
        self.productId = productId
        self.productType = productType
        self.referenceId = referenceId
        self.sourceType = sourceType
        self.sourceId = sourceId
        self.extras = extras
    }

    var json: JSONValue { (try? JSONCoding.value(self)) ?? .null }
}

/// TIDAL's PlaybackState: exactly one at any time.
enum PlaybackState: String, Sendable, Codable {
    case idle = "IDLE"
    case playing = "PLAYING"
    case notPlaying = "NOT_PLAYING"
    case stalled = "STALLED"
}

/// What is known about the product actually being played, whichever source it comes from.
/// Filled from the catalog for local files and from the source resolver otherwise.
struct TrackInfo: Sendable, Equatable {
    var requestedProductId: String
    var actualProductId: String
    var audioQuality: String?
    var codec: String?
    var sampleRate: Int?
    var bitDepth: Int?
    var durationSeconds: Double?
    var trackGain: Double?
    var trackPeak: Double?
    var albumGain: Double?
    var albumPeak: Double?
    /// True when played from the device's own copy.
    var offline: Bool
    var display = DisplayMetadata()
    /// Bits per second (the file's average, the HLS playlist's, or what the decoder found).
    var bitRate: Int?
    /// A video's quality (the one it was offlined at); nil for a track.
    var videoQuality: String?

    /// Codec, rate, depth and quality: what `PlaybackQualityChanged` is about.
    var format: AudioFormatKey {
        AudioFormatKey(codec: codec, sampleRate: sampleRate, bitDepth: bitDepth, audioQuality: audioQuality)
    }

    /// `title`, `artist`, `album`, `durationSeconds` and `images` as the wire carries them.
    var displayFields: [String: JSONValue] { Self.displayFields(of: self) }

    /// The display fields of `track`, all null when there is none.
    static func displayFields(of track: TrackInfo?) -> [String: JSONValue] {
        [
            "title": track?.display.title.map(JSONValue.string) ?? .null,
            "artist": track?.display.artist.map(JSONValue.string) ?? .null,
            "album": track?.display.album.map(JSONValue.string) ?? .null,
            "durationSeconds": track?.durationSeconds.map(JSONValue.number) ?? .null,
            "images": track?.display.images.map { .object($0.mapValues(JSONValue.string)) } ?? .null,
        ]
    }
}

/// The actual format of what is heard; a change between two products is `PlaybackQualityChanged`.
struct AudioFormatKey: Sendable, Equatable {
    var codec: String?
    var sampleRate: Int?
    var bitDepth: Int?
    var audioQuality: String?
}

/// TIDAL's PlaybackContext for the active product, as `player.status` and the events show it.
struct PlaybackContext: Sendable, Equatable {
    var track: TrackInfo
    var playbackSessionId: String
    var referenceId: String?
    var startAssetPosition: Double

    var json: JSONValue {
        func opt<T>(_ v: T?, _ f: (T) -> JSONValue) -> JSONValue { v.map(f) ?? .null }
        var fields: [String: JSONValue] = [
            "productId": .string(track.actualProductId),
            "requestedProductId": .string(track.requestedProductId),
            "streamType": "ON_DEMAND",
            "assetPresentation": "FULL",
            "audioMode": "STEREO",
            "audioQuality": opt(track.audioQuality) { .string($0) },
            "audioCodec": opt(track.codec) { .string($0) },
            "audioSampleRate": opt(track.sampleRate) { .number(Double($0)) },
            "audioBitDepth": opt(track.bitDepth) { .number(Double($0)) },
            "duration": opt(track.durationSeconds) { .number($0) },
            "startAssetPosition": .number(startAssetPosition),
            "playbackSessionId": .string(playbackSessionId),
            "referenceId": opt(referenceId) { .string($0) },
            "offline": .bool(track.offline),
            "audioBitRate": opt(track.bitRate) { .number(Double($0)) },
            "videoQuality": opt(track.videoQuality) { .string($0) },
        ]
        fields.merge(track.displayFields) { _, display in display }
        return .object(fields)
    }
}

extension PlaybackContext {
    /// `product`'s context as `track` plays it, in a playback session of its own.
    init(track: TrackInfo, product: MediaProduct, startAssetPosition: Double) {
        self.track = track
        self.playbackSessionId = UUID().uuidString.lowercased()
        self.referenceId = product.referenceId
        self.startAssetPosition = startAssetPosition
    }
}
