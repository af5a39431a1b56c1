import CFFmpeg

/// FFmpeg's libraries, which no binary links: they are opened the first time a decoder or a
/// decryptor is made (see Shared/CFFmpeg/loader.c).
enum FFmpegLibraries {
    /// Opens them, once per process. The first call blocks while about 140 libraries are mapped,
    /// so it belongs where blocking is allowed, as every decoder entry point already is.
    /// Throws `MediaLibraryMissing` when one cannot be opened (a device image without FFmpeg).
    static func load() throws(DecoderError) {
        if let failure = cassette_ffmpeg_load() {
            throw DecoderError(code: .libraryMissing, message: String(cString: failure))
        }
    }
}
