import CFFmpeg

/// The libav objects of one open file: owns the `AVFormatContext *`, `AVCodecContext *`,
/// `AVPacket *` and `AVFrame *` (and, for a `ByteSource`, the custom I/O context) and frees
/// whichever were created in deinit. Kept apart from
/// `AudioDecoder` so that a failure halfway through opening still frees everything.
final class MediaContexts {
    var format: UnsafeMutablePointer<AVFormatContext>?
    var codec: UnsafeMutablePointer<AVCodecContext>?
    var packet: UnsafeMutablePointer<AVPacket>?
    var frame: UnsafeMutablePointer<AVFrame>?
    /// The custom I/O of a decoder reading a `ByteSource`; nil when libavformat opened a path.
    var io: SourceIO?

    deinit {
        av_frame_free(&frame)
        av_packet_free(&packet)
        avcodec_free_context(&codec)
        avformat_close_input(&format)
        // After the format context: a custom AVIOContext outlives the demuxer that reads it.
        io = nil
    }
}
