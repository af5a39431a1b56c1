import AudioFormat
import CFFmpeg

/// Interleaved sample formats the decoder can produce: the project's one `SampleFormat`,
/// the same type the ALSA output accepts.
public typealias AudioSampleFormat = SampleFormat

extension SampleFormat {
    var avFormat: AVSampleFormat {
        switch self {
        case .s16: AV_SAMPLE_FMT_S16
        case .s32: AV_SAMPLE_FMT_S32
        case .float: AV_SAMPLE_FMT_FLT
        }
    }
}

/// What the caller wants out of the decoder; nil fields keep the source's value.
public struct DecoderOutputFormat: Sendable, Hashable {
    public var sampleFormat: AudioSampleFormat
    public var sampleRate: Int?
    public var channels: Int?

    public init(sampleFormat: AudioSampleFormat = .s16, sampleRate: Int? = nil, channels: Int? = nil) {
        self.sampleFormat = sampleFormat
        self.sampleRate = sampleRate
        self.channels = channels
    }
}

/// The concrete format of every `AudioChunk` a decoder returns.
public struct DecodedFormat: Sendable, Hashable {
    public var sampleFormat: AudioSampleFormat
    public var sampleRate: Int
    public var channels: Int

    public var bytesPerFrame: Int { sampleFormat.bytesPerSample * channels }

    public init(sampleFormat: AudioSampleFormat, sampleRate: Int, channels: Int) {
        self.sampleFormat = sampleFormat
        self.sampleRate = sampleRate
        self.channels = channels
    }
}

/// The source file's audio stream, as libavformat and libavcodec describe it.
public struct AudioFormatInfo: Sendable, Hashable {
    /// FFmpeg's short codec name: "flac", "mp3", "aac", "opus", "pcm_s16le", …
    public var codecName: String
    /// The container: "flac", "mp3", "mov,mp4,m4a,3gp,3g2,mj2", "ogg", "wav", …
    public var containerName: String
    public var sampleRate: Int
    public var channels: Int
    /// The decoder's native sample format, e.g. "s16", "fltp", "s32".
    public var sampleFormatName: String
    /// Bits per sample of the source when the format has one (FLAC, WAV); nil for lossy codecs.
    public var bitsPerSample: Int?
    public var durationSeconds: Double?
    /// Bits per second (container's, else codec's), if known.
    public var bitRate: Int?
    /// Gapless metadata for the later trimming work. Encoder delay in samples at the stream's rate
    /// (`codecpar->initial_padding`, e.g. the Opus pre-skip). libavcodec already drops the priming
    /// samples the demuxer signals as skip-samples side data (Opus pre-skip, LAME/iTunes delay),
    /// so this is informational unless a container leaves the trimming to the player.
    public var initialPadding: Int
    /// Samples of padding at the end (`codecpar->trailing_padding`), when the container says.
    public var trailingPadding: Int
    /// Samples to decode and discard after a seek before output is exact (`seek_preroll`, Opus).
    public var seekPreroll: Int
}

/// One piece of decoded audio, interleaved, in the decoder's `outputFormat`.
public struct AudioChunk: Sendable {
    /// `frameCount * outputFormat.bytesPerFrame` bytes of interleaved little-endian samples.
    public var samples: [UInt8]
    public var frameCount: Int
    /// Seconds from the start of the stream to this chunk's first frame.
    public var presentationTime: Double

    public init(samples: [UInt8], frameCount: Int, presentationTime: Double) {
        self.samples = samples
        self.frameCount = frameCount
        self.presentationTime = presentationTime
    }
}
