import AudioOutput
import Foundation
import MediaDecoder

/// The device's life on the output thread: opening, closing, a failure, and the attempts to
/// open it again. A PCM that failed is closed at once and never written again: the next write
/// goes to a PCM opened afresh (with ALSA's configuration read again, so a PCM defined or a card
/// plugged in since is found).
extension OutputThread {
    /// The device is unavailable: the pipe item it could not take (a track's start, or the rest
    /// of a chunk from `offset` on), where that audio belongs, and when to try again.
    struct Outage {
        var held: PipeItem
        var offset: Int
        /// For held audio: the track it belongs to and the position of its first unwritten frame.
        var resume: Segment?
        var attempts: Int
        var retryAt: ContinuousClock.Instant

        /// While the output is paused nothing is tried (the device is not needed); the pause
        /// ending wakes the output thread, which tries then.
        func secondsToRetry(paused: Bool) -> Double {
            if paused { return 3_600 }
            let (s, atto) = (retryAt - .now).components
            return max(0, Double(s) + Double(atto) * 1e-18)
        }
    }

    /// Waits between attempts to open the device again: doubling from the first, up to the last.
    static let retryDelays: [Duration] = [.milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2)]

    static func retryDelay(after attempts: Int) -> Duration {
        retryDelays[min(max(0, attempts - 1), retryDelays.count - 1)]
    }

    /// Opens the PCM for `newFormat`, reading ALSA's configuration again first after a failure
    /// (and then reporting `outputRestored` on success).
    func openDevice(_ newFormat: DecodedFormat) throws(AudioOutputError) {
        let recovering = reloadConfiguration
        if recovering { ALSAConfiguration.reload() }
        // After the first failure (reported with ALSA's reason) alsa-lib's own lines would
        // repeat at every attempt: they are left out until the device opens.
        ALSAConfiguration.setQuiet(outage != nil)
        defer { ALSAConfiguration.setQuiet(false) }
        let opened = try PCMOutput(device: settings.device, configuration: settings.configuration(for: newFormat))
        reloadConfiguration = false
        pcm = opened
        format = newFormat
        underrunsCounted = 0
        health.opened()
        if recovering { emit(.outputRestored) }
    }

    /// Closes the PCM (dropping what it holds), counting its underruns first.
    func closeDevice() {
        guard let pcm else { return }
        health.addUnderruns(pcm.underrunCount - underrunsCounted)
        pcm.close()
        self.pcm = nil
        health.closed()
    }

    /// Opening or writing failed: the PCM is closed for good, the work is held, and the device
    /// is tried again after a while. `resume` says where held audio belongs.
    func deviceFailed(_ error: AudioOutputError, holding item: PipeItem, offset: Int = 0, token: TrackToken?, resume: Segment?) {
        if let pcm { health.addUnderruns(pcm.underrunCount - underrunsCounted) }
        pcm?.close()
        pcm = nil
        reloadConfiguration = true
        health.failed(error.description)
        let attempts = (outage?.attempts ?? 0) + 1
        let first = outage == nil
        outage = Outage(
            held: item, offset: offset, resume: resume, attempts: attempts,
            retryAt: .now + Self.retryDelay(after: attempts))
        starved = nil
        softStart.cancel()
        if let resume {
            // Heard up to here (what the failed device still held is lost): the position waits.
            pipe.publish(
                PositionSnapshot(
                    token: resume.token, position: resume.position, writtenUpTo: resume.position,
                    at: .now, running: false))
        }
        if first { emit(.outputUnavailable(token, reason: error.description)) }
    }

    /// The time to try the device again came: open it, and on success do the held work, faded in.
    func retryDevice() {
        guard let held = outage, let wanted = format else {
            outage = nil
            return
        }
        do {
            try openDevice(wanted)
        } catch {
            deviceFailed(error, holding: held.held, offset: held.offset, token: held.resume?.token, resume: held.resume)
            return
        }
        outage = nil
        written = 0
        deviceKeepsTime = false
        softStart.begin(sampleRate: wanted.sampleRate)
        switch held.held {
        case .start:
            segments = []
            handle(held.held)
        case .audio(let token, let chunk):
            guard let resume = held.resume else { return }
            segments = [Segment(token: token, startFrame: 0, position: resume.position, loudness: resume.loudness)]
            awaitingFirstFrame.insert(token)
            feeding = true
            write(chunk, from: held.offset, item: held.held)
        case .end, .failed:
            handle(held.held)
        }
    }
}
