import MediaDecoder

/// One playback of one product inside the audio pipeline. A new token per load, per implicit
/// transition and per station item, so late items of an abandoned track are recognised.
typealias TrackToken = UInt64

/// What the decode thread hands the output thread, in play order.
enum PipeItem {
    /// A track (or a seek inside it) begins: its format, the position of its first frame, and
    /// its loudness tags (the output thread scales its samples by them).
    case start(TrackToken, DecodedFormat, position: Double, loudness: LoudnessTags)
    case audio(TrackToken, AudioChunk)
    /// The track's last chunk was queued. `more`: another track follows in this pipe (gapless).
    case end(TrackToken, more: Bool)
    /// Opening or decoding failed; nothing more comes for this track.
    case failed(TrackToken, name: String, message: String)

    var frames: Int {
        if case .audio(_, let chunk) = self { return chunk.frameCount }
        return 0
    }
    var bytes: Int {
        if case .audio(_, let chunk) = self { return chunk.samples.count }
        return 0
    }
}

/// One track to decode. `open` runs on the decode thread, because FFmpeg's objects must be
/// created and used on the one thread that owns them.
struct TrackJob: Sendable {
    let token: TrackToken
    var startPosition: Double
    var loudness = LoudnessTags()
    let open: @Sendable () throws -> AudioDecoder

    init(
        token: TrackToken, startPosition: Double, loudness: LoudnessTags = LoudnessTags(),
        open: @escaping @Sendable () throws -> AudioDecoder
    ) {
        self.token = token
        self.startPosition = startPosition
        self.loudness = loudness
        self.open = open
    }
}

/// What the pipeline tells the engine, in the order it happened.
enum PipelineEvent: Sendable {
    /// The decoder of `token` opened: what the file really holds (may differ from the catalog).
    case opened(TrackToken, AudioFormatInfo)
    /// The first frame of `token` was written to the device (after a load, a play or a seek);
    /// `position`: where in the track that frame is.
    case firstFrame(TrackToken, position: Double)
    /// The last frame of `from` was heard (or lost with a failed device) and `to` comes next.
    /// `endPosition`: where `from` ended. `heard`: `to`'s first frame is heard now (a gapless
    /// border); false when `to` still has to be written (the device reopens for its format, or
    /// failed), and `firstFrame` tells when it is.
    case transitioned(from: TrackToken, to: TrackToken, endPosition: Double, heard: Bool)
    /// Everything of `token` was played out and nothing follows.
    case finished(TrackToken, position: Double)
    /// Opening or decoding `token` failed.
    case failed(TrackToken, name: String, message: String)
    /// The bytes of `token` stalled, resumed or failed (a file being downloaded, a stream).
    case source(TrackToken, ByteSourceEvent)
    /// The output refused `token`'s samples (a mismatch inside the player, not the device).
    case outputFailed(TrackToken, name: String, message: String)
    /// The device could not be opened, or failed, under `token` (nil: with nothing playing).
    /// `reason` is ALSA's. The output thread closed it and keeps trying to open it again,
    /// holding the audio it could not write.
    case outputUnavailable(TrackToken?, reason: String)
    /// The device opened again after `outputUnavailable`; the held audio follows (with a
    /// `firstFrame` of the track it belongs to).
    case outputRestored
    /// The device ran dry while playing `token`: nothing more was decoded in time, and nothing
    /// is heard until enough is buffered again (STALLED).
    case starved(TrackToken)
    /// Enough of `token` is buffered again after `starved`: it is heard again.
    case fed(TrackToken)
}

/// Where playback is: the audible track, the position of the frame being heard, whether the
/// device clock is running. Computed from frames written minus the device delay.
struct PositionSnapshot: Sendable {
    var token: TrackToken?
    /// Position of the frame heard at `at`.
    var position: Double
    /// Upper bound: the position just after the last frame written for that track.
    var writtenUpTo: Double
    var at: ContinuousClock.Instant
    var running: Bool

    /// The position now: moves on with the wall clock while the device runs.
    func position(now: ContinuousClock.Instant = .now) -> Double {
        guard running else { return position }
        let (s, atto) = (now - at).components
        let elapsed = Double(s) + Double(atto) * 1e-18
        return min(writtenUpTo, position + elapsed)
    }
}
