import MediaDecoder

/// What `player.status` shows as `playbackContext`: the product actually played (after a
/// replacement) and its metadata, from the catalog (offline) or playbackinfo (stream).
struct PlaybackContextInfo: Sendable, Equatable {
    var requestedProductId: String, actualProductId: String
    var audioQuality: String?, codec: String?, sampleRate: Int?, bitDepth: Int?, durationSeconds: Double?
    var trackGain: Double?, trackPeak: Double?, albumGain: Double?, albumPeak: Double?
    /// True when played from the local file.
    var offline: Bool
}

/// The bytes to decode and what they are.
struct PlaybackSource: Sendable {
    let source: any ByteSource
    let context: PlaybackContextInfo
}
