import CFFmpeg

/// The libav objects of one open file: owns the `AVFormatContext *`, `AVCodecContext *`,
/// `AVPacket *` and `AVFrame *` and frees whichever were created in deinit. Kept apart from
/// `AudioDecoder` so that a failure halfway through opening still frees everything.
final class MediaContexts {
    var format: UnsafeMutablePointer<AVFormatContext>?
    var codec: UnsafeMutablePointer<AVCodecContext>?
    var packet: UnsafeMutablePointer<AVPacket>?
    var frame: UnsafeMutablePointer<AVFrame>?

    deinit {
        av_frame_free(&frame)
        av_packet_free(&packet)
        avcodec_free_context(&codec)
        avformat_close_input(&format)
    }
}
