import AudioFormat
import CALSA

#if canImport(Glibc)
    import Glibc
#endif

extension PCMOutput {
    /// Writes interleaved frames of the negotiated format, blocking until all are queued on the
    /// device (and, with `.realtime` pacing, until at most one buffer is ahead of the wall clock).
    /// Recovers from underruns (-EPIPE: prepare) and suspends (-ESTRPIPE: resume, else prepare).
    /// Resumes a paused output. Throws `InvalidSamples` for a partial frame, `WriteFailed`,
    /// `DeviceGone` or `Closed`. `bytes` stays the caller's.
    public func write(bytes: UnsafeRawBufferPointer) throws(AudioOutputError) {
        let pcm = try openHandle()
        let frameBytes = parameters.bytesPerFrame
        guard bytes.count % frameBytes == 0 else {
            throw AudioOutputError(code: .invalidSamples, message: "\(bytes.count) bytes is not a whole number of \(frameBytes)-byte frames")
        }
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        if isPaused { try pause(false) }
        let total = bytes.count / frameBytes
        var done = 0
        while done < total {
            let n = snd_pcm_writei(pcm, base + done * frameBytes, snd_pcm_uframes_t(total - done))
            if n >= 0 {
                done += n
            } else {
                try recover(pcm, Int32(n))
            }
        }
        if pacing == .realtime { sleepBlocking(pacer.didWrite(total)) }
    }

    /// Writes interleaved samples; `Sample` must match the negotiated format (`Int16` for `.s16`,
    /// `Int32` for `.s32`, `Float` for `.float`), else `InvalidSamples`.
    public func write<Sample: PCMSample>(frames samples: UnsafeBufferPointer<Sample>) throws(AudioOutputError) {
        guard Sample.pcmFormat == parameters.format else {
            throw AudioOutputError(code: .invalidSamples, message: "\(Sample.self) samples for a \(parameters.format) output")
        }
        try write(bytes: UnsafeRawBufferPointer(samples))
    }

    /// Writes interleaved samples; see `write(frames:)` for the buffer form.
    public func write<Sample: PCMSample>(frames samples: [Sample]) throws(AudioOutputError) {
        try samples.withUnsafeBufferPointer { (buffer) throws(AudioOutputError) in try write(frames: buffer) }
    }

    /// Blocks until everything written has played, then leaves the output ready for more writes.
    public func drain() throws(AudioOutputError) {
        let pcm = try openHandle()
        if isPaused { try pause(false) }
        if pacing == .realtime { sleepBlocking(pacer.timeToDrain()) }
        let err = snd_pcm_drain(pcm)
        pacer.reset()
        guard err == 0 || err == -EPIPE else { throw AudioOutputError(.operationFailed, "snd_pcm_drain", alsa: err) }
        try prepare(pcm, after: "snd_pcm_drain")
    }

    /// Discards everything buffered at once (stop, seek, skip), leaving the output ready for more writes.
    public func drop() throws(AudioOutputError) {
        let pcm = try openHandle()
        let err = snd_pcm_drop(pcm)
        pacer.reset()
        isPaused = false
        pausedInHardware = false
        guard err == 0 else { throw AudioOutputError(.operationFailed, "snd_pcm_drop", alsa: err) }
        try prepare(pcm, after: "snd_pcm_drop")
    }

    /// Pauses or resumes. Uses the hardware pause when `parameters.canPause` and the stream is
    /// running, so the buffered audio resumes where it stopped; otherwise pausing drops the
    /// buffer (the next write starts afresh).
    public func pause(_ paused: Bool) throws(AudioOutputError) {
        let pcm = try openHandle()
        guard paused != isPaused else { return }
        if paused {
            let running = snd_pcm_state(pcm) == SND_PCM_STATE_RUNNING
            if running && parameters.canPause {
                let err = snd_pcm_pause(pcm, 1)
                guard err == 0 else { throw AudioOutputError(.operationFailed, "snd_pcm_pause(1)", alsa: err) }
                pausedInHardware = true
            } else if running {
                try drop()
            }
            pacer.pause()
            isPaused = true
        } else {
            if pausedInHardware {
                let err = snd_pcm_pause(pcm, 0)
                if err < 0 { try recover(pcm, err) }
            }
            pacer.resume()
            isPaused = false
            pausedInHardware = false
        }
    }

    /// Frames written but not yet heard: the device's delay, or with `.realtime` pacing the
    /// larger of that and the wall-clock backlog. Subtract from frames written for the position.
    public func delay() throws(AudioOutputError) -> Int {
        let pcm = try openHandle()
        var frames: snd_pcm_sframes_t = 0
        let err = snd_pcm_delay(pcm, &frames)
        // An underrun (-EPIPE) means nothing is left to play; the next write recovers.
        guard err == 0 || err == -EPIPE else { throw AudioOutputError(.operationFailed, "snd_pcm_delay", alsa: err) }
        let device = err == 0 ? max(0, frames) : 0
        return pacing == .realtime ? max(device, pacer.pendingFrames()) : device
    }

    /// Recovers from a failed write, or throws. Counts underruns and suspends.
    private func recover(_ pcm: OpaquePointer, _ err: Int32) throws(AudioOutputError) {
        switch err {
        case -EINTR, -EAGAIN:
            return
        case -EPIPE:
            underrunCount += 1
            try prepare(pcm, after: "underrun")
        case -ESTRPIPE:
            underrunCount += 1
            var resumed = snd_pcm_resume(pcm)
            while resumed == -EAGAIN {
                sleepBlocking(.milliseconds(10))
                resumed = snd_pcm_resume(pcm)
            }
            if resumed < 0 { try prepare(pcm, after: "suspend") }
        case -ENODEV:
            throw AudioOutputError(.deviceGone, "snd_pcm_writei", alsa: err)
        default:
            let recovered = snd_pcm_recover(pcm, err, 1)
            guard recovered == 0 else { throw AudioOutputError(.writeFailed, "snd_pcm_writei", alsa: err) }
        }
    }

    private func prepare(_ pcm: OpaquePointer, after what: String) throws(AudioOutputError) {
        let err = snd_pcm_prepare(pcm)
        guard err == 0 else {
            throw AudioOutputError(err == -ENODEV ? .deviceGone : .writeFailed, "snd_pcm_prepare after \(what)", alsa: err)
        }
    }
}
