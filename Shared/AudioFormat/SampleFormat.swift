/// Interleaved little-endian sample formats, shared by the decoder (what it produces) and
/// the ALSA output (what it accepts), so decoded audio goes to the device without a mapping.
/// Each C wrapper adds its own library's constant for a case in an extension.
public enum SampleFormat: Sendable, Hashable, CaseIterable {
    case s16
    case s32
    case float

    public var bytesPerSample: Int {
        switch self {
        case .s16: 2
        case .s32, .float: 4
        }
    }
}
