import MediaDecoder

/// What `player.status` shows as `playbackContext`: the product actually played (after a
/// replacement) and its metadata, from the catalog (offline) or playbackinfo (stream).
struct PlaybackContextInfo: Sendable, Equatable {
    var requestedProductId: String, actualProductId: String
    var audioQuality: String?, codec: String?, sampleRate: Int?, bitDepth: Int?, durationSeconds: Double?
    var trackGain: Double?, trackPeak: Double?, albumGain: Double?, albumPeak: Double?
    /// True when played from the local file.
    var offline: Bool
    /// What a "now playing" screen shows.
    var display = DisplayMetadata()
    /// Bits per second: the file's size over its length when both are known; for an HLS
    /// presentation, the average of the media playlist played.
    var bitRate: Int?
    /// A video's quality (`LOW`, `MEDIUM`, `HIGH`, `AUDIO_ONLY`): the one it was offlined at;
    /// nil for a track.
    var videoQuality: String?
}

/// The display metadata of the product actually played: from the catalog's `mediaItems`, the
/// origin's playbackinfo, or a streaming station's item list, whichever knows.
struct DisplayMetadata: Sendable, Equatable {
    var title: String?
    var artist: String?
    var album: String?
    /// Image kind (`poster`, `thumbnail`) → where the image is: for a product played from the
    /// device, its file relative to the state directory (`media/images/tr-1/poster.png`);
    /// otherwise the path on the origin the playbackinfo or station named.
    var images: [String: String]?

    /// `self`, with what it lacks taken from `other`.
    func filled(from other: DisplayMetadata) -> DisplayMetadata {
        DisplayMetadata(
            title: title ?? other.title, artist: artist ?? other.artist, album: album ?? other.album,
            images: images ?? other.images)
    }
}

/// The bytes to decode and what they are.
struct PlaybackSource: Sendable {
    let source: any ByteSource
    let context: PlaybackContextInfo
}

/// Average bits per second of a file of `bytes` lasting `seconds`, when both are known.
func averageBitRate(bytes: Int64?, seconds: Double?) -> Int? {
    guard let bytes, bytes > 0, let seconds, seconds > 0 else { return nil }
    return Int((Double(bytes) * 8 / seconds).rounded())
}
