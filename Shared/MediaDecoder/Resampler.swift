import AudioFormat
import CFFmpeg

/// libswresample conversion from the decoder's frames to the interleaved output format.
/// Owns the `SwrContext *` and frees it in deinit. Rebuilt when the input format changes
/// mid-stream (rare, but legal in MP3 and AAC streams) and after a seek.
final class Resampler {
    struct Input: Equatable {
        var format: Int32
        var sampleRate: Int32
        var channels: Int32
    }

    private var swr: OpaquePointer?
    let input: Input
    let output: DecodedFormat

    /// `layout` is the input's channel layout; an unspecified order is replaced by the default
    /// layout for its channel count, which swresample needs to mix.
    init(input: Input, layout: AVChannelLayout, output: DecodedFormat) throws(DecoderError) {
        self.input = input
        self.output = output
        var inLayout = AVChannelLayout()
        if layout.order == AV_CHANNEL_ORDER_UNSPEC || layout.nb_channels != input.channels {
            av_channel_layout_default(&inLayout, input.channels)
        } else {
            var source = layout
            _ = av_channel_layout_copy(&inLayout, &source)
        }
        var outLayout = AVChannelLayout()
        av_channel_layout_default(&outLayout, Int32(output.channels))
        defer {
            av_channel_layout_uninit(&inLayout)
            av_channel_layout_uninit(&outLayout)
        }
        var context: OpaquePointer? = nil
        var err = swr_alloc_set_opts2(
            &context, &outLayout, output.sampleFormat.avFormat, Int32(output.sampleRate),
            &inLayout, AVSampleFormat(rawValue: input.format), input.sampleRate, 0, nil)
        if err >= 0 { err = swr_init(context) }
        guard err >= 0, let context else {
            swr_free(&context)
            throw DecoderError(.codecOpenFailed, "swr_init", ffmpeg: err)
        }
        swr = context
    }

    deinit { swr_free(&swr) }

    /// Output frames (at the output rate) still buffered inside the resampler.
    var bufferedFrames: Int {
        Int(swr_get_delay(swr, Int64(output.sampleRate)))
    }

    /// Converts `frame` (nil flushes what is buffered) into interleaved bytes.
    func convert(_ frame: UnsafeMutablePointer<AVFrame>?) throws(DecoderError) -> [UInt8] {
        let inCount = frame.map { Int32($0.pointee.nb_samples) } ?? 0
        let capacity = Int(swr_get_out_samples(swr, inCount)) + 32
        guard capacity > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: capacity * output.bytesPerFrame)
        let converted = bytes.withUnsafeMutableBytes { buffer -> Int32 in
            var out: UnsafeMutablePointer<UInt8>? = buffer.baseAddress?.assumingMemoryBound(to: UInt8.self)
            let input = frame.map {
                UnsafeMutableRawPointer($0.pointee.extended_data).assumingMemoryBound(to: UnsafePointer<UInt8>?.self)
            }
            return swr_convert(swr, &out, Int32(capacity), input, inCount)
        }
        guard converted >= 0 else { throw DecoderError(.decodeFailed, "swr_convert", ffmpeg: converted) }
        bytes.removeLast(bytes.count - Int(converted) * output.bytesPerFrame)
        return bytes
    }
}
