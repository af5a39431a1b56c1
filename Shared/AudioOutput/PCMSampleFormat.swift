import AudioFormat
import CALSA

/// Interleaved little-endian sample formats the output accepts: the project's one
/// `SampleFormat`, the same type the decoder produces.
public typealias PCMSampleFormat = SampleFormat

extension SampleFormat {
    var alsaFormat: snd_pcm_format_t {
        switch self {
        case .s16: SND_PCM_FORMAT_S16_LE
        case .s32: SND_PCM_FORMAT_S32_LE
        case .float: SND_PCM_FORMAT_FLOAT_LE
        }
    }
}

/// A Swift sample type that maps to one `PCMSampleFormat` (on a little-endian host).
public protocol PCMSample: BitwiseCopyable {
    static var pcmFormat: PCMSampleFormat { get }
}

extension Int16: PCMSample { public static var pcmFormat: PCMSampleFormat { .s16 } }
extension Int32: PCMSample { public static var pcmFormat: PCMSampleFormat { .s32 } }
extension Float: PCMSample { public static var pcmFormat: PCMSampleFormat { .float } }
