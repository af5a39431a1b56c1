import AudioFormat

/// How writes are paced.
public enum PCMPacing: Sendable, Hashable {
    /// The device's own clock: `write` blocks while the device buffer is full.
    case device
    /// Additionally, never let more than one buffer of audio get ahead of the wall clock.
    /// For ALSA's `null` and `file` PCMs, which take audio as fast as it comes
    /// (MPD's null output `sync`); positions and `delay()` then follow real time.
    case realtime
}

/// What the caller asks for when opening a PCM. Rate and buffer sizes are negotiated
/// (`*_near`): read `PCMOutput.parameters` for what the device granted.
public struct PCMConfiguration: Sendable, Hashable {
    public var format: PCMSampleFormat
    public var sampleRate: Int
    public var channels: Int
    /// Device buffer in frames; nil asks for `defaultBufferMicroseconds`.
    public var bufferFrames: Int?
    /// Period (interrupt interval) in frames; nil asks for a quarter of the buffer.
    public var periodFrames: Int?
    public var pacing: PCMPacing

    /// 500 ms: enough slack for a loaded 2-core device, short enough for a responsive pause.
    public static let defaultBufferMicroseconds = 500_000

    public init(
        format: PCMSampleFormat = .s16, sampleRate: Int = 44_100, channels: Int = 2,
        bufferFrames: Int? = nil, periodFrames: Int? = nil, pacing: PCMPacing = .device
    ) {
        self.format = format
        self.sampleRate = sampleRate
        self.channels = channels
        self.bufferFrames = bufferFrames
        self.periodFrames = periodFrames
        self.pacing = pacing
    }
}

/// What the device granted after hardware-parameter negotiation.
public struct PCMParameters: Sendable, Hashable {
    public var format: PCMSampleFormat
    /// May differ from the requested rate if the device cannot do it exactly.
    public var sampleRate: Int
    public var channels: Int
    public var bufferFrames: Int
    public var periodFrames: Int
    /// Whether `pause(true)` keeps the buffered audio (hardware pause) or drops it.
    public var canPause: Bool

    public var bytesPerFrame: Int { format.bytesPerSample * channels }
}
