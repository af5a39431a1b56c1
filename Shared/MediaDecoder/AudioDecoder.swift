import CFFmpeg

#if canImport(Glibc)
    import Glibc
#endif

/// Decodes the best audio stream of a local file, or of a `ByteSource`, into interleaved PCM chunks.
///
/// Single-thread use: FFmpeg's contexts are not thread-safe and decoding is blocking CPU work,
/// so create, use and drop a decoder on one thread (the player's decode thread, never a Swift
/// concurrency thread). That is why it is not `Sendable`.
///
/// Owns its libav objects (through `MediaContexts`) and its resampler; both are freed when the
/// decoder goes away.
public final class AudioDecoder {
    /// The source's audio stream.
    public let info: AudioFormatInfo
    /// The format of every chunk `nextChunk()` returns.
    public let outputFormat: DecodedFormat

    let contexts: MediaContexts
    /// Non-nil once opened; replaced when the input format changes and after a seek.
    var resampler: Resampler
    let streamIndex: Int32
    /// The stream's time base in seconds per tick, and its first timestamp (in ticks).
    let timeBase: Double
    let startTimestamp: Int64

    enum State {
        /// Reading packets and decoding.
        case decoding
        /// End of file reached; the decoder is being flushed.
        case draining
        /// Everything was returned; `nextChunk()` returns nil until a seek.
        case finished
    }
    var state = State.decoding
    /// Time of the next output frame, for frames without a timestamp.
    var nextPresentationTime = 0.0
    /// After a seek: output before this time is dropped, so the first chunk starts exactly there.
    var discardUntil: Double?
    var consecutiveErrors = 0
    /// Encoder delay and padding this decoder removes itself (see `GaplessTrim`).
    let trim: GaplessTrim
    /// Seconds of leading delay removed: stream timestamps are this much ahead of positions.
    let timeOffset: Double
    /// Position (seconds) where the real audio ends; output stops there. Nil: at end of file.
    let endTime: Double?
    /// The first packet, read while opening to decide the trim; fed before reading more.
    var pendingPacket: Bool

    /// Consecutive undecodable packets tolerated (a damaged frame in an MP3 is skipped) before
    /// `nextChunk()` gives up with `DecodeFailed`.
    public static let maxConsecutiveDecodeErrors = 32

    /// Opens `path` and prepares the decoder and resampler.
    /// Throws `FileNotFound`, `InvalidFile`, `NoAudioStream`, `UnsupportedCodec`,
    /// `CodecOpenFailed`, `InvalidOutputFormat` or `MediaLibraryMissing`.
    public init(path: String, output: DecoderOutputFormat = DecoderOutputFormat()) throws(DecoderError) {
        try FFmpegLibraries.load()
        // `contexts` frees whatever was set up if any step below throws.
        let contexts = MediaContexts()
        let err = avformat_open_input(&contexts.format, path, nil, nil)
        guard err == 0, contexts.format != nil else {
            let code: DecoderError.Code =
                err == cassette_averror(ENOENT) || err == cassette_averror(EACCES)
                ? .fileNotFound : .invalidFile
            throw DecoderError(code, "avformat_open_input(\(path))", ffmpeg: err)
        }
        let opened = try Self.prepare(contexts, output: output)
        (streamIndex, timeBase, startTimestamp, info, outputFormat, resampler) =
            (opened.streamIndex, opened.timeBase, opened.startTimestamp, opened.info, opened.outputFormat, opened.resampler)
        (trim, pendingPacket) = (opened.trim, opened.pendingPacket)
        (timeOffset, endTime, discardUntil) = Self.trimTimes(opened.trim, sourceRate: opened.info.sampleRate)
        self.contexts = contexts
    }

    /// Reads `source` through a custom AVIOContext (a file still being downloaded, a stream):
    /// the same `info`, `nextChunk()` and `seek(to:)` as a path. The source's `read` may block;
    /// this init and every later call then block with it, on the caller's thread.
    /// Throws what `init(path:output:)` throws, or `SourceFailed` (with `sourceError`) when the
    /// source itself failed. The decoder keeps the source; closing it is the caller's business.
    public init(source: any ByteSource, output: DecoderOutputFormat = DecoderOutputFormat()) throws(DecoderError) {
        try FFmpegLibraries.load()
        let contexts = MediaContexts()
        let io = try SourceIO(source: source)
        contexts.io = io
        guard let format = avformat_alloc_context() else {
            throw DecoderError(code: .codecOpenFailed, message: "avformat_alloc_context failed")
        }
        format.pointee.pb = io.context
        format.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        contexts.format = format
        // On failure avformat_open_input frees the format context (not our I/O) and sets it to nil.
        let err = avformat_open_input(&contexts.format, nil, nil, nil)
        guard err == 0, contexts.format != nil else {
            throw io.sourceFailure ?? DecoderError(.invalidFile, "avformat_open_input(byte source)", ffmpeg: err)
        }
        let opened: Opened
        do {
            opened = try Self.prepare(contexts, output: output)
        } catch {
            throw io.sourceFailure ?? error
        }
        (streamIndex, timeBase, startTimestamp, info, outputFormat, resampler) =
            (opened.streamIndex, opened.timeBase, opened.startTimestamp, opened.info, opened.outputFormat, opened.resampler)
        (trim, pendingPacket) = (opened.trim, opened.pendingPacket)
        (timeOffset, endTime, discardUntil) = Self.trimTimes(opened.trim, sourceRate: opened.info.sampleRate)
        self.contexts = contexts
    }

    /// What opening computes, handed to the stored properties in one go.
    private struct Opened {
        var streamIndex: Int32
        var timeBase: Double
        var startTimestamp: Int64
        var info: AudioFormatInfo
        var outputFormat: DecodedFormat
        var resampler: Resampler
        var trim: GaplessTrim
        var pendingPacket: Bool
    }

    /// The trim in seconds: the offset of timestamps, where output ends, and (with a leading
    /// trim) the position before which decoded audio is dropped.
    private static func trimTimes(_ trim: GaplessTrim, sourceRate: Int) -> (Double, Double?, Double?) {
        let rate = Double(sourceRate)
        let offset = Double(trim.leadingFrames) / rate
        return (offset, trim.validFrames.map { Double($0) / rate }, trim.leadingFrames > 0 ? 0 : nil)
    }

    /// Everything after the container is open: stream choice, codec, output format, resampler.
    private static func prepare(_ contexts: MediaContexts, output: DecoderOutputFormat) throws(DecoderError) -> Opened {
        let format = contexts.format!
        var err = avformat_find_stream_info(format, nil)
        if err < 0 { throw DecoderError(.invalidFile, "avformat_find_stream_info", ffmpeg: err) }

        var codec: UnsafePointer<AVCodec>? = nil
        let index = av_find_best_stream(format, AVMEDIA_TYPE_AUDIO, -1, -1, &codec, 0)
        guard index >= 0, let stream = format.pointee.streams[Int(index)] else {
            var code = DecoderError.Code.noAudioStream
            if index == cassette_averror_decoder_not_found() {
                code = .unsupportedCodec
            } else if (0..<Int(format.pointee.nb_streams)).contains(where: {
                format.pointee.streams[$0]?.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_AUDIO
            }) {
                // An audio stream the probe could not make sense of (0 channels, no rate): a damaged
                // or misdetected file rather than one without audio.
                code = .invalidFile
            }
            throw DecoderError(code, "av_find_best_stream", ffmpeg: index)
        }
        let params = stream.pointee.codecpar!
        guard let codec else {
            throw DecoderError(code: .unsupportedCodec, message: "no decoder for \(String(cString: avcodec_get_name(params.pointee.codec_id)))")
        }
        for i in 0..<Int(format.pointee.nb_streams) where Int32(i) != index {
            format.pointee.streams[i]?.pointee.discard = AVDISCARD_ALL
        }
        let timeBase = av_q2d(stream.pointee.time_base)
        let startTimestamp = stream.pointee.start_time == cassette_av_nopts_value() ? 0 : stream.pointee.start_time

        contexts.codec = avcodec_alloc_context3(codec)
        guard let codecContext = contexts.codec else { throw DecoderError(code: .codecOpenFailed, message: "avcodec_alloc_context3 failed") }
        err = avcodec_parameters_to_context(codecContext, params)
        if err < 0 { throw DecoderError(.codecOpenFailed, "avcodec_parameters_to_context", ffmpeg: err) }
        codecContext.pointee.pkt_timebase = stream.pointee.time_base
        err = avcodec_open2(codecContext, codec, nil)
        if err < 0 { throw DecoderError(.codecOpenFailed, "avcodec_open2", ffmpeg: err) }

        contexts.packet = av_packet_alloc()
        contexts.frame = av_frame_alloc()
        guard contexts.packet != nil, contexts.frame != nil else {
            throw DecoderError(code: .codecOpenFailed, message: "av_packet_alloc/av_frame_alloc failed")
        }

        var info = Self.describe(format: format, stream: stream, codec: codecContext)
        // Reads the first packet now when the trim depends on it; `feedPacket` sends it first.
        let hints = GaplessTrim.hints(format: format, stream: stream)
        var trim = GaplessTrim()
        var pendingPacket = false
        if hints.isMP4 {
            var read: Int32 = 0
            repeat {
                av_packet_unref(contexts.packet)
                read = av_read_frame(format, contexts.packet)
            } while read >= 0 && contexts.packet!.pointee.stream_index != index
            if read >= 0 {
                pendingPacket = true
                trim = GaplessTrim.decide(hints, demuxerSkips: GaplessTrim.demuxerSkips(contexts.packet!, startTimestamp: startTimestamp))
            } else {
                trim = GaplessTrim.decide(hints, demuxerSkips: false)
            }
            if let valid = trim.validFrames, info.sampleRate > 0 { info.durationSeconds = Double(valid) / Double(info.sampleRate) }
        }
        guard info.sampleRate > 0, info.channels > 0 else {
            throw DecoderError(code: .invalidFile, message: "audio stream with \(info.channels) channels at \(info.sampleRate) Hz")
        }
        let channels = output.channels ?? info.channels
        let rate = output.sampleRate ?? info.sampleRate
        guard (1...64).contains(channels), (1_000...768_000).contains(rate) else {
            throw DecoderError(code: .invalidOutputFormat, message: "\(channels) channels at \(rate) Hz")
        }
        let outputFormat = DecodedFormat(sampleFormat: output.sampleFormat, sampleRate: rate, channels: channels)
        let resampler = try Resampler(
            input: Self.currentInput(of: codecContext), layout: codecContext.pointee.ch_layout,
            output: outputFormat)
        return Opened(
            streamIndex: index, timeBase: timeBase, startTimestamp: startTimestamp, info: info,
            outputFormat: outputFormat, resampler: resampler, trim: trim, pendingPacket: pendingPacket)
    }

    /// The decoder's current output parameters, which the resampler's input must match.
    static func currentInput(of codec: UnsafeMutablePointer<AVCodecContext>) -> Resampler.Input {
        Resampler.Input(
            format: codec.pointee.sample_fmt.rawValue, sampleRate: codec.pointee.sample_rate,
            channels: codec.pointee.ch_layout.nb_channels)
    }

    private static func describe(
        format: UnsafeMutablePointer<AVFormatContext>, stream: UnsafeMutablePointer<AVStream>,
        codec: UnsafeMutablePointer<AVCodecContext>
    ) -> AudioFormatInfo {
        let params = stream.pointee.codecpar.pointee
        let nopts = cassette_av_nopts_value()
        var duration: Double? = nil
        if format.pointee.duration != nopts && format.pointee.duration > 0 {
            duration = Double(format.pointee.duration) / Double(AV_TIME_BASE)
        } else if stream.pointee.duration != nopts && stream.pointee.duration > 0 {
            duration = Double(stream.pointee.duration) * av_q2d(stream.pointee.time_base)
        }
        let bitRate = format.pointee.bit_rate > 0 ? format.pointee.bit_rate : params.bit_rate
        let bits = params.bits_per_raw_sample > 0 ? params.bits_per_raw_sample : params.bits_per_coded_sample
        let sampleFormatName = av_get_sample_fmt_name(codec.pointee.sample_fmt).map { String(cString: $0) } ?? "unknown"
        return AudioFormatInfo(
            codecName: String(cString: avcodec_get_name(params.codec_id)),
            containerName: String(cString: format.pointee.iformat.pointee.name),
            sampleRate: Int(codec.pointee.sample_rate),
            channels: Int(codec.pointee.ch_layout.nb_channels),
            sampleFormatName: sampleFormatName,
            bitsPerSample: bits > 0 ? Int(bits) : nil,
            durationSeconds: duration,
            bitRate: bitRate > 0 ? Int(bitRate) : nil,
            initialPadding: Int(params.initial_padding),
            trailingPadding: Int(params.trailing_padding),
            seekPreroll: Int(params.seek_preroll))
    }
}
