import CALSA

/// One open ALSA playback PCM, interleaved, with negotiated hardware parameters.
///
/// Single-thread use: ALSA's `snd_pcm_t` is not thread-safe and `write` blocks (on the device,
/// or on the wall clock with `.realtime` pacing), so create, use and close a `PCMOutput` on one
/// dedicated thread, never on a Swift concurrency thread. That is why it is not `Sendable`.
///
/// Owns the `snd_pcm_t *` (and the private configuration tree it was opened from) until
/// `close()` or deinit. Closing does not play out buffered audio: call `drain()` first for that.
public final class PCMOutput {
    /// The open PCM; nil once closed.
    var pcm: OpaquePointer?
    /// Kept alive while `pcm` is open, when the PCM came from caller-provided configuration text.
    private var configTree: ALSAConfigTree?
    /// What the device granted.
    public let parameters: PCMParameters
    public let pacing: PCMPacing
    /// The device name it was opened with.
    public let deviceName: String
    /// Underruns (and suspends) recovered from by `write`, for diagnostics.
    public internal(set) var underrunCount = 0
    var pacer: RealtimePacer
    var isPaused = false
    /// Whether `pause(true)` used the hardware pause (else it dropped the buffer).
    var pausedInHardware = false

    /// Opens the PCM `device` ("default", "null", "hw:0,0", "plughw:1", …) from the system configuration.
    /// Throws `OpenFailed` or `FormatUnsupported`.
    public convenience init(device: String = "default", configuration: PCMConfiguration) throws(AudioOutputError) {
        try self.init(device: device, configTree: nil, configuration: configuration)
    }

    /// Opens the PCM `device` as defined by `alsaConfig` (ALSA configuration syntax, loaded on top of
    /// the system configuration), e.g. a `file` PCM for tests:
    /// `pcm.capture { type file; slave.pcm "null"; file "/tmp/out.raw"; format "raw" }`.
    /// Throws `InvalidConfig`, `OpenFailed` or `FormatUnsupported`.
    public convenience init(device: String, alsaConfig: String, configuration: PCMConfiguration) throws(AudioOutputError) {
        try self.init(device: device, configTree: ALSAConfigTree(text: alsaConfig), configuration: configuration)
    }

    private init(device: String, configTree: ALSAConfigTree?, configuration: PCMConfiguration) throws(AudioOutputError) {
        var handle: OpaquePointer? = nil
        let err: Int32
        if let configTree {
            err = snd_pcm_open_lconf(&handle, device, SND_PCM_STREAM_PLAYBACK, 0, configTree.root)
        } else {
            err = snd_pcm_open(&handle, device, SND_PCM_STREAM_PLAYBACK, 0)
        }
        guard err == 0, let handle else { throw AudioOutputError(.openFailed, "snd_pcm_open(\(device))", alsa: err) }
        do throws(AudioOutputError) {
            parameters = try Self.negotiateHardware(handle, configuration)
            try Self.configureSoftware(handle, parameters)
            let prepared = snd_pcm_prepare(handle)
            guard prepared == 0 else { throw AudioOutputError(.openFailed, "snd_pcm_prepare", alsa: prepared) }
        } catch {
            snd_pcm_close(handle)
            throw error
        }
        pcm = handle
        self.configTree = configTree
        deviceName = device
        pacing = configuration.pacing
        pacer = RealtimePacer(rate: parameters.sampleRate, leadFrames: parameters.bufferFrames)
    }

    deinit { close() }

    /// Closes the PCM, dropping buffered audio. Idempotent; later calls throw `Closed`.
    public func close() {
        if let pcm { snd_pcm_close(pcm) }
        pcm = nil
        configTree = nil
    }

    /// The open handle, or `Closed`.
    func openHandle() throws(AudioOutputError) -> OpaquePointer {
        guard let pcm else { throw AudioOutputError(code: .closed, message: "the PCM \(deviceName) is closed") }
        return pcm
    }

    private static func negotiateHardware(_ pcm: OpaquePointer, _ config: PCMConfiguration) throws(AudioOutputError) -> PCMParameters {
        guard let hw = cassette_snd_pcm_hw_params_new() else {
            throw AudioOutputError(code: .openFailed, message: "snd_pcm_hw_params_malloc failed")
        }
        defer { snd_pcm_hw_params_free(hw) }

        func check(_ err: Int32, _ what: String) throws(AudioOutputError) {
            if err < 0 { throw AudioOutputError(.formatUnsupported, what, alsa: err) }
        }
        try check(snd_pcm_hw_params_any(pcm, hw), "snd_pcm_hw_params_any")
        try check(snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED), "interleaved access")
        try check(snd_pcm_hw_params_set_format(pcm, hw, config.format.alsaFormat), "sample format \(config.format)")
        try check(snd_pcm_hw_params_set_channels(pcm, hw, UInt32(config.channels)), "\(config.channels) channels")
        var rate = UInt32(config.sampleRate)
        try check(snd_pcm_hw_params_set_rate_near(pcm, hw, &rate, nil), "rate \(config.sampleRate)")
        if let frames = config.bufferFrames {
            var size = snd_pcm_uframes_t(frames)
            try check(snd_pcm_hw_params_set_buffer_size_near(pcm, hw, &size), "buffer of \(frames) frames")
        } else {
            var time = UInt32(PCMConfiguration.defaultBufferMicroseconds)
            try check(snd_pcm_hw_params_set_buffer_time_near(pcm, hw, &time, nil), "buffer of \(time) µs")
        }
        var bufferSize: snd_pcm_uframes_t = 0
        try check(snd_pcm_hw_params_get_buffer_size(hw, &bufferSize), "snd_pcm_hw_params_get_buffer_size")
        var period = snd_pcm_uframes_t(config.periodFrames ?? max(1, Int(bufferSize) / 4))
        try check(snd_pcm_hw_params_set_period_size_near(pcm, hw, &period, nil), "period of \(period) frames")
        try check(snd_pcm_hw_params(pcm, hw), "snd_pcm_hw_params")

        // Read back what was installed: *_near may have moved both sizes.
        try check(snd_pcm_hw_params_get_rate(hw, &rate, nil), "snd_pcm_hw_params_get_rate")
        try check(snd_pcm_hw_params_get_buffer_size(hw, &bufferSize), "snd_pcm_hw_params_get_buffer_size")
        try check(snd_pcm_hw_params_get_period_size(hw, &period, nil), "snd_pcm_hw_params_get_period_size")
        return PCMParameters(
            format: config.format, sampleRate: Int(rate), channels: config.channels,
            bufferFrames: Int(bufferSize), periodFrames: Int(period),
            canPause: snd_pcm_hw_params_can_pause(hw) == 1)
    }

    /// Start playing once the buffer is full (or on drain); wake the writer once a period is free.
    private static func configureSoftware(_ pcm: OpaquePointer, _ parameters: PCMParameters) throws(AudioOutputError) {
        guard let sw = cassette_snd_pcm_sw_params_new() else {
            throw AudioOutputError(code: .openFailed, message: "snd_pcm_sw_params_malloc failed")
        }
        defer { snd_pcm_sw_params_free(sw) }
        func check(_ err: Int32, _ what: String) throws(AudioOutputError) {
            if err < 0 { throw AudioOutputError(.formatUnsupported, what, alsa: err) }
        }
        try check(snd_pcm_sw_params_current(pcm, sw), "snd_pcm_sw_params_current")
        try check(
            snd_pcm_sw_params_set_start_threshold(pcm, sw, snd_pcm_uframes_t(parameters.bufferFrames)),
            "start threshold")
        try check(snd_pcm_sw_params_set_avail_min(pcm, sw, snd_pcm_uframes_t(parameters.periodFrames)), "avail_min")
        try check(snd_pcm_sw_params(pcm, sw), "snd_pcm_sw_params")
    }
}
