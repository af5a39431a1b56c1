import CFFmpeg

/// A failure to open, decode or seek a media file. `name` is stable (logs, the wire's
/// `error.data.name`, tests); `message` carries FFmpeg's own text.
public struct DecoderError: Error, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The path does not exist or cannot be read.
        public static let fileNotFound = Code("FileNotFound")
        /// libavformat cannot open or parse the container (corrupt or not a media file).
        public static let invalidFile = Code("InvalidFile")
        /// The file has no audio stream.
        public static let noAudioStream = Code("NoAudioStream")
        /// No decoder for the stream's codec in this FFmpeg build.
        public static let unsupportedCodec = Code("UnsupportedCodec")
        /// The decoder or the resampler could not be set up for the stream.
        public static let codecOpenFailed = Code("CodecOpenFailed")
        /// The requested output format is not possible (rate or channels out of range).
        public static let invalidOutputFormat = Code("InvalidOutputFormat")
        /// Too many consecutive packets failed to decode, or reading failed.
        public static let decodeFailed = Code("DecodeFailed")
        /// The container could not seek to the requested time.
        public static let seekFailed = Code("SeekFailed")
        /// The `ByteSource` failed (a download that failed, an origin that refused, a closed
        /// source); `DecoderError.sourceError` holds the source's own error.
        public static let sourceFailed = Code("SourceFailed")
        /// FFmpeg's libraries could not be opened (missing from the device).
        public static let libraryMissing = Code("MediaLibraryMissing")
    }

    public var code: Code
    public var message: String
    /// FFmpeg's negative error code, if it reported one.
    public var ffmpegError: Int32?
    /// For `SourceFailed`: what the `ByteSource` threw, with its own stable name (e.g. the
    /// player's `SourceError`, an `OriginError`). Callers report this rather than the wrapper.
    public var sourceError: (any Error)?

    public init(code: Code, message: String, ffmpegError: Int32? = nil, sourceError: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.ffmpegError = ffmpegError
        self.sourceError = sourceError
    }

    /// The byte source threw `error` underneath a libav call.
    init(sourceFailure error: any Error) {
        self.init(code: .sourceFailed, message: "the byte source failed: \(error)", sourceError: error)
    }

    public var name: String { code.name }
    public var description: String { "\(code.name): \(message)" }

    /// `what` failed with FFmpeg error `error`; the message is FFmpeg's text for it.
    init(_ code: Code, _ what: String, ffmpeg error: Int32) {
        self.init(code: code, message: "\(what): \(ffmpegErrorText(error))", ffmpegError: error)
    }
}

/// FFmpeg's text for an error code (av_strerror through the shim).
func ffmpegErrorText(_ error: Int32) -> String {
    var buffer = [CChar](repeating: 0, count: 128)
    cassette_av_strerror(error, &buffer, buffer.count)
    let end = buffer.firstIndex(of: 0) ?? buffer.count
    return String(decoding: buffer[..<end].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
