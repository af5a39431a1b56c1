import AudioOutput
import BlockingIO
import Foundation
import Glibc
import MediaDecoder

/// How the output thread opens the device.
struct OutputSettings: Sendable {
    var device: String
    var pacing: PCMPacing
    var bufferMilliseconds: Int?
    var periodMilliseconds: Int?

    /// The device buffer when the config does not set one. Small, because what is in the device
    /// already has its gain: a loudness mode change is heard after this plus one period (TIDAL
    /// wants 100 ms). The decoder's own lead (`decodeAheadSeconds`) is what absorbs slow decoding.
    static let defaultBufferMilliseconds = 60

    /// Audio buffered after the device ran dry before it is fed again: a source that cannot keep
    /// up is heard in stretches of at least this, with STALLED between them, rather than as
    /// audio trickling at the source's pace.
    static let refillSeconds = 1.0

    /// Past the moment the device has played everything it was given, how long before that counts
    /// as running dry (the output thread's own wake-up jitter).
    static let dryMarginSeconds = 0.02

    func configuration(for format: DecodedFormat) -> PCMConfiguration {
        let buffer = bufferMilliseconds ?? Self.defaultBufferMilliseconds
        return PCMConfiguration(
            format: format.sampleFormat, sampleRate: format.sampleRate, channels: format.channels,
            bufferFrames: max(64, buffer * format.sampleRate / 1000),
            periodFrames: periodMilliseconds.map { max(16, $0 * format.sampleRate / 1000) },
            pacing: pacing)
    }
}

/// The output thread: the only owner of the ALSA PCM, for its whole life. Takes decoded audio
/// from the pipe and writes it, keeping the PCM open across tracks of the same format
/// (gapless) and reopening it for a track of another format (rate, sample type or channels),
/// and publishes the heard position as frames written minus the device's delay.
///
/// It supervises the device (`OutputThread+Device.swift`): a PCM that cannot be opened or
/// fails while playing is closed, never written again, and opened again with backoff; the
/// audio it could not take is held meanwhile and played on, faded in, once the device opens.
/// A device that ran dry (the source could not keep up) is fed again once enough is buffered,
/// also faded in (`SoftStart`).
final class OutputThread {
    let pipe: AudioPipe
    let settings: OutputSettings
    let health: OutputHealth
    let emit: @Sendable (PipelineEvent) -> Void

    var pcm: PCMOutput?
    /// The format of the open PCM, or of the one to open again while the device is unavailable.
    var format: DecodedFormat?
    var devicePaused = false
    /// Frames written since the PCM was opened or last dropped.
    var written = 0
    /// Tracks whose frames are in the device, oldest first: where each starts (in `written`
    /// frames) and the position of its first frame. The first one is the audible one.
    struct Segment {
        var token: TrackToken
        var startFrame: Int
        var position: Double
        var loudness: LoudnessTags
    }
    var segments: [Segment] = []
    /// Tokens that have not had their first frame written since a start, a seek or a reopen.
    var awaitingFirstFrame: Set<TrackToken> = []
    /// The last `.end` said another track follows: its start is a border, not a fresh start.
    var borderPending = false
    /// Reused buffer for scaled samples (the chunk itself stays untouched).
    var scratch: [UInt8] = []
    /// The device ran dry under this track: nothing is written until enough is buffered again.
    var starved: TrackToken?
    /// Audio of the current track is being written (not past its end): the device must be fed.
    var feeding = false
    /// The device reported audio still to play after a write: it plays in time, so running dry
    /// can be seen. (An unpaced `null` or `file` PCM takes everything at once and never has any.)
    var deviceKeepsTime = false
    /// The device is unavailable: what could not be done, and when to try the device again.
    var outage: Outage?
    /// The last attempt failed: ALSA's configuration is read again before the next one.
    var reloadConfiguration = false
    /// Underruns of the open PCM already added to `health`.
    var underrunsCounted = 0
    /// The fade-in after the sound was cut: the device opened again, or ran dry and plays on.
    var softStart = SoftStart()

    private init(
        pipe: AudioPipe, settings: OutputSettings, health: OutputHealth,
        emit: @escaping @Sendable (PipelineEvent) -> Void
    ) {
        self.pipe = pipe
        self.settings = settings
        self.health = health
        self.emit = emit
    }

    static func start(
        pipe: AudioPipe, settings: OutputSettings, health: OutputHealth,
        emit: @escaping @Sendable (PipelineEvent) -> Void
    ) -> Thread {
        // No priority of its own: Foundation's `qualityOfService` does nothing on Linux, and the
        // unit forbids realtime scheduling. The thread sleeps between writes, and the scheduler
        // runs a thread that wakes from sleep ahead of busy ones: a 1 000-file sync on the same
        // core does not starve it (`PlaybackUnderSyncTests`).
        NamedThread.start("cassette-output") {
            // A `file` PCM writing into a pipe whose reader went away gets EPIPE (then ALSA's
            // -EIO, a device failure) rather than a SIGPIPE that would end the process: blocked
            // on this thread, the signal only stays pending.
            var signals = sigset_t()
            sigemptyset(&signals)
            sigaddset(&signals, SIGPIPE)
            pthread_sigmask(SIG_BLOCK, &signals, nil)
            OutputThread(pipe: pipe, settings: settings, health: health, emit: emit).run()
        }
    }

    private func run() {
        while true {
            switch pipe.nextOutputWork(
                devicePaused: devicePaused, dryAfter: dryAfter, refillBytes: refillBytes,
                retryAfter: outage.map { $0.secondsToRetry(paused: devicePaused) })
            {
            case .shutdown:
                closeDevice()
                return
            case .retry:
                retryDevice()
            case .dry:
                // Everything written has been heard and nothing followed: what is heard now is
                // silence. The position stops here until playback goes on.
                guard let token = segments.last?.token else { continue }
                starved = token
                publish(running: false)
                emit(.starved(token))
            case .drop:
                if let pcm {
                    // A PCM that cannot even drop its buffer has failed: it is not used again.
                    do { try pcm.drop() } catch { closeDevice() }
                }
                devicePaused = false
                written = 0
                segments = []
                borderPending = false
                awaitingFirstFrame = []
                starved = nil
                feeding = false
                softStart.cancel()
                // Nothing is held any more: the next track's start tries the device at once.
                outage = nil
            case .pause(let paused):
                try? pcm?.pause(paused)
                devicePaused = paused
                publish()
            case .item(let item):
                if let token = starved {
                    starved = nil
                    emit(.fed(token))
                    // The track that ran dry plays on after a silence: faded in, as after a
                    // reopen. (A next track after a dry border starts as any track starts.)
                    if case .audio(let next, _) = item, next == token, let format {
                        softStart.begin(sampleRate: format.sampleRate)
                    }
                }
                handle(item)
            }
        }
    }

    /// Seconds until the device has played all that was written, while a track is being fed and
    /// the device runs; nil when there is nothing it must be fed (paused, ended, starved already).
    private var dryAfter: Double? {
        guard feeding, starved == nil, !devicePaused, deviceKeepsTime, let pcm, let format, !segments.isEmpty else { return nil }
        let delay = (try? pcm.delay()) ?? 0
        return Double(delay) / Double(format.sampleRate) + OutputSettings.dryMarginSeconds
    }

    /// After running dry: how much to buffer before playing on.
    private var refillBytes: Int? {
        guard starved != nil, let format else { return nil }
        return Int(OutputSettings.refillSeconds * Double(format.sampleRate)) * format.bytesPerFrame
    }

    func handle(_ item: PipeItem) {
        switch item {
        case .start(let token, let newFormat, let position, let loudness):
            let border = borderPending && segments.last.map { $0.token != token } == true
            borderPending = false
            let segment = Segment(token: token, startFrame: written, position: position, loudness: loudness)
            // A fresh start must first be fed once; at a border the previous track kept it running.
            if !border { feeding = false }
            if newFormat != format || pcm == nil {
                guard reopen(for: newFormat, start: item, border: border) else { return }
                segments = [Segment(token: token, startFrame: 0, position: position, loudness: loudness)]
                awaitingFirstFrame.insert(token)
            } else if border {
                segments.append(segment)
            } else {
                // A fresh start or a seek: whatever was queued before is gone (dropped).
                segments = [segment]
                awaitingFirstFrame.insert(token)
            }
        case .audio(let token, let chunk):
            guard pcm != nil, segments.last?.token == token else { return }
            feeding = true
            write(chunk, from: 0, item: item)
        case .end(let token, let more):
            guard segments.last?.token == token else { return }
            // Past this track's last frame: only the next track (if any) must come in time.
            feeding = more
            if more {
                borderPending = true
                return
            }
            // Nothing follows: let the device play everything out, then say so.
            if let pcm { try? pcm.drain() }
            guard !pipe.flushPending else { return }
            publish(running: false)
            let position = segments.last.map { $0.position + Double(written - $0.startFrame) / Double(format?.sampleRate ?? 1) } ?? 0
            emit(.finished(token, position: position))
            closeDevice()
            format = nil
            written = 0
            segments = []
        case .failed(let token, let name, let message):
            feeding = false
            if borderPending, let current = segments.last {
                // The next track failed before its first frame: the current one plays out and
                // ends first, so the error is raised while the failed track is the active one.
                borderPending = false
                handle(.end(current.token, more: false))
            }
            emit(.failed(token, name: name, message: message))
        }
    }

    /// Another format needs another PCM: the old one plays out what it holds first. At a border
    /// (`start` follows the last track in it) that is the moment its last frame is heard, so the
    /// border is reported then, after any still pending; the new track's first frame is reported
    /// when it is written. False when the new PCM cannot be opened (the start is then held
    /// until the device opens again).
    private func reopen(for newFormat: DecodedFormat, start: PipeItem, border: Bool) -> Bool {
        guard case .start(let token, _, _, _) = start else { return false }
        if let pcm, !segments.isEmpty { try? pcm.drain() }
        if border, !pipe.flushPending, let rate = format?.sampleRate {
            reportBordersPassed(rate: rate, endingAt: written, next: token)
        }
        closeDevice()
        format = newFormat
        written = 0
        segments = []
        deviceKeepsTime = false
        do {
            try openDevice(newFormat)
            return true
        } catch {
            deviceFailed(error, holding: start, token: token, resume: nil)
            return false
        }
    }

    /// The transitions of every track in the device but the last, and of the last to `next`:
    /// their audio has played out (or was lost with the device), and the next one is not heard yet.
    func reportBordersPassed(rate: Int, endingAt end: Int, next: TrackToken?) {
        for (index, segment) in segments.enumerated() {
            let last = index + 1 == segments.count
            guard let to = last ? next : segments[index + 1].token else { continue }
            let stop = last ? end : segments[index + 1].startFrame
            emit(
                .transitioned(
                    from: segment.token, to: to,
                    endPosition: segment.position + Double(stop - segment.startFrame) / Double(rate), heard: false))
        }
    }
}
