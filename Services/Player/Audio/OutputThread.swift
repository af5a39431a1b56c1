import AudioOutput
import BlockingIO
import Foundation
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
        return PCMConfiguration(format: format.sampleFormat, sampleRate: format.sampleRate, channels: format.channels,
                         bufferFrames: max(64, buffer * format.sampleRate / 1000),
                         periodFrames: periodMilliseconds.map { max(16, $0 * format.sampleRate / 1000) },
                         pacing: pacing)
    }
}

/// The output thread: the only owner of the ALSA PCM. Takes decoded audio from the pipe and
/// writes it, keeping the PCM open across tracks of the same format (gapless) and reopening it
/// for a track of another format (rate, sample type or channels), and publishes the heard
/// position as frames written minus the device's delay.
final class OutputThread {
    private let pipe: AudioPipe
    private let settings: OutputSettings
    private let emit: @Sendable (PipelineEvent) -> Void

    private var pcm: PCMOutput?
    private var format: DecodedFormat?
    private var devicePaused = false
    /// Frames written since the PCM was opened or last dropped.
    private var written = 0
    /// Tracks whose frames are in the device, oldest first: where each starts (in `written`
    /// frames) and the position of its first frame. The first one is the audible one.
    private struct Segment { var token: TrackToken; var startFrame: Int; var position: Double; var loudness: LoudnessTags }
    private var segments: [Segment] = []
    /// Tokens that have not had their first frame written since a start or seek.
    private var awaitingFirstFrame: Set<TrackToken> = []
    /// The last `.end` said another track follows: its start is a border, not a fresh start.
    private var borderPending = false
    /// Reused buffer for scaled samples (the chunk itself stays untouched).
    private var scratch: [UInt8] = []
    /// The device ran dry under this track: nothing is written until enough is buffered again.
    private var starved: TrackToken?
    /// Audio of the current track is being written (not past its end): the device must be fed.
    private var feeding = false
    /// The device reported audio still to play after a write: it plays in time, so running dry
    /// can be seen. (An unpaced `null` or `file` PCM takes everything at once and never has any.)
    private var deviceKeepsTime = false

    private init(pipe: AudioPipe, settings: OutputSettings, emit: @escaping @Sendable (PipelineEvent) -> Void) {
        self.pipe = pipe
        self.settings = settings
        self.emit = emit
    }

    static func start(pipe: AudioPipe, settings: OutputSettings, emit: @escaping @Sendable (PipelineEvent) -> Void) -> Thread {
        // No priority of its own: Foundation's `qualityOfService` does nothing on Linux, and the
        // unit forbids realtime scheduling. The thread sleeps between writes, and the scheduler
        // runs a thread that wakes from sleep ahead of busy ones: a 1 000-file sync on the same
        // core does not starve it (`PlaybackUnderSyncTests`).
        NamedThread.start("cassette-output") { OutputThread(pipe: pipe, settings: settings, emit: emit).run() }
    }

    private func run() {
        while true {
            switch pipe.nextOutputWork(devicePaused: devicePaused, dryAfter: dryAfter, refillBytes: refillBytes) {
            case .shutdown:
                pcm?.close()
                return
            case .dry:
                // Everything written has been heard and nothing followed: what is heard now is
                // silence. The position stops here until playback goes on.
                guard let token = segments.last?.token else { continue }
                starved = token
                publish(running: false)
                emit(.starved(token))
            case .drop:
                try? pcm?.drop()
                devicePaused = false
                written = 0
                segments = []
                borderPending = false
                awaitingFirstFrame = []
                starved = nil
                feeding = false
            case .pause(let paused):
                try? pcm?.pause(paused)
                devicePaused = paused
                publish()
            case .item(let item):
                if let token = starved {
                    starved = nil
                    emit(.fed(token))
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

    private func handle(_ item: PipeItem) {
        switch item {
        case .start(let token, let newFormat, let position, let loudness):
            let border = borderPending && segments.last.map { $0.token != token } == true
            borderPending = false
            let segment = Segment(token: token, startFrame: written, position: position, loudness: loudness)
            // A fresh start must first be fed once; at a border the previous track kept it running.
            if !border { feeding = false }
            if newFormat != format || pcm == nil {
                guard reopen(for: newFormat, token: token, border: border) else { return }
                segments = [Segment(token: token, startFrame: 0, position: position, loudness: loudness)]
                // At a border the transition was reported as the old PCM played out.
                if !border { awaitingFirstFrame.insert(token) }
            } else if border {
                segments.append(segment)
            } else {
                // A fresh start or a seek: whatever was queued before is gone (dropped).
                segments = [segment]
                awaitingFirstFrame.insert(token)
            }
        case .audio(let token, let chunk):
            guard let pcm, let format, let segment = segments.last, segment.token == token else { return }
            feeding = true
            do {
                try write(chunk, of: segment, format: format, to: pcm)
            } catch let error as AudioOutputError {
                emit(.outputFailed(token, name: error.name, message: error.message))
                return
            } catch {
                emit(.outputFailed(token, name: "WriteFailed", message: "\(error)"))
                return
            }
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
            pcm?.close()
            pcm = nil
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
    /// (`token` follows the last track in it) that is the moment its last frame is heard and
    /// the next track's first comes, so the border is reported then, after any still pending.
    /// False (and `outputFailed` reported) when the new PCM cannot be opened.
    private func reopen(for newFormat: DecodedFormat, token: TrackToken, border: Bool) -> Bool {
        if let pcm, !segments.isEmpty { try? pcm.drain() }
        if border, !pipe.flushPending, let rate = format?.sampleRate {
            for (index, segment) in segments.enumerated() {
                let end = index + 1 < segments.count ? segments[index + 1].startFrame : written
                let to = index + 1 < segments.count ? segments[index + 1].token : token
                emit(.transitioned(from: segment.token, to: to,
                                   endPosition: segment.position + Double(end - segment.startFrame) / Double(rate)))
            }
        }
        pcm?.close()
        pcm = nil
        format = nil
        written = 0
        segments = []
        deviceKeepsTime = false
        do {
            pcm = try PCMOutput(device: settings.device, configuration: settings.configuration(for: newFormat))
            format = newFormat
            return true
        } catch {
            emit(.outputFailed(token, name: error.name, message: error.message))
            return false
        }
    }

    /// Writes `chunk` in pieces of at most one period, each scaled by the volume its track has
    /// under the settings of that moment: the gain follows the track (so it changes exactly at
    /// a border) and a settings change applies from the next piece on. The position is published
    /// after every piece, so it never lags behind a device buffer smaller than a chunk.
    private func write(_ chunk: AudioChunk, of segment: Segment, format: DecodedFormat, to pcm: PCMOutput) throws {
        let bytesPerFrame = format.bytesPerFrame
        let piece = max(64, min(pcm.parameters.periodFrames, 4_096)) * bytesPerFrame
        try chunk.samples.withUnsafeBytes { all in
            var offset = 0
            while offset < all.count {
                let end = min(all.count, offset + piece)
                let part = UnsafeRawBufferPointer(rebasing: all[offset..<end])
                let volume = pipe.loudnessSettings.volume(for: segment.loudness)
                if volume == 1 {
                    try pcm.write(bytes: part)
                } else {
                    if scratch.count < part.count { scratch = [UInt8](repeating: 0, count: piece) }
                    try scratch.withUnsafeMutableBytes { buffer in
                        let scaled = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<part.count])
                        scaled.copyMemory(from: part)
                        LoudnessGain.apply(volume, to: scaled, format: format.sampleFormat)
                        try pcm.write(bytes: UnsafeRawBufferPointer(scaled))
                    }
                }
                written += part.count / bytesPerFrame
                if awaitingFirstFrame.remove(segment.token) != nil { emit(.firstFrame(segment.token, position: segment.position)) }
                publish()
                offset = end
            }
        }
    }

    /// Publishes the heard position and reports any border the device has now played past.
    private func publish(running: Bool = true) {
        guard let pcm, let format, !segments.isEmpty else { return }
        let delay = (try? pcm.delay()) ?? 0
        if delay > 0 { deviceKeepsTime = true }
        let played = max(0, written - delay)
        let rate = Double(format.sampleRate)
        while segments.count > 1 && played >= segments[1].startFrame {
            let previous = segments.removeFirst()
            emit(.transitioned(from: previous.token, to: segments[0].token,
                               endPosition: previous.position + Double(segments[0].startFrame - previous.startFrame) / rate))
        }
        let audible = segments[0]
        let end = segments.count > 1 ? segments[1].startFrame : written
        pipe.publish(PositionSnapshot(
            token: audible.token,
            position: audible.position + Double(max(0, played - audible.startFrame)) / rate,
            writtenUpTo: audible.position + Double(end - audible.startFrame) / rate,
            at: .now, running: running && !devicePaused))
    }
}
