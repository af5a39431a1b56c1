import AudioOutput
import Foundation
import MediaDecoder

/// Writing a chunk and publishing what is heard.
extension OutputThread {
    /// Writes `chunk` from byte `start` on, in pieces of at most one period, each scaled by the
    /// volume its track has under the settings of that moment: the gain follows the track (so it
    /// changes exactly at a border) and a settings change applies from the next piece on. The
    /// position is published after every piece, so it never lags behind a device buffer smaller
    /// than a chunk. When the device fails, the rest of the chunk is held (`deviceFailed`).
    func write(_ chunk: AudioChunk, from start: Int, item: PipeItem) {
        guard let pcm, let format, let segment = segments.last else { return }
        let bytesPerFrame = format.bytesPerFrame
        let piece = max(64, min(pcm.parameters.periodFrames, 4_096)) * bytesPerFrame
        var offset = start
        let failure: AudioOutputError? = chunk.samples.withUnsafeBytes { all in
            while offset < all.count {
                let end = min(all.count, offset + piece)
                let part = UnsafeRawBufferPointer(rebasing: all[offset..<end])
                let volume = pipe.loudnessSettings.volume(for: segment.loudness)
                do {
                    if volume == 1 && !softStart.isActive {
                        try pcm.write(bytes: part)
                    } else {
                        if scratch.count < part.count { scratch = [UInt8](repeating: 0, count: piece) }
                        try scratch.withUnsafeMutableBytes { buffer in
                            let scaled = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<part.count])
                            scaled.copyMemory(from: part)
                            if softStart.isActive {
                                softStart.apply(volume: volume, to: scaled, format: format)
                            } else {
                                LoudnessGain.apply(volume, to: scaled, format: format.sampleFormat)
                            }
                            try pcm.write(bytes: UnsafeRawBufferPointer(scaled))
                        }
                    }
                } catch let error as AudioOutputError {
                    return error
                } catch {
                    return AudioOutputError(code: .writeFailed, message: "\(error)")
                }
                written += part.count / bytesPerFrame
                health.wrote(underruns: pcm.underrunCount - underrunsCounted)
                underrunsCounted = pcm.underrunCount
                if awaitingFirstFrame.remove(segment.token) != nil { emit(.firstFrame(segment.token, position: segment.position)) }
                publish()
                offset = end
            }
            return nil
        }
        guard let failure else { return }
        if failure.code == .invalidSamples {
            // Not the device's fault: the samples do not fit the PCM. Reported as a failure of the track.
            emit(.outputFailed(segment.token, name: failure.name, message: failure.message))
            return
        }
        // Where the rest of the chunk belongs: frames written so far count as played (what the
        // device still held is lost with it). Borders passed before are reported first.
        let rate = Double(format.sampleRate)
        let resume = Segment(
            token: segment.token, startFrame: 0,
            position: segment.position + Double(written - segment.startFrame) / rate, loudness: segment.loudness)
        if segments.count > 1 {
            segments.removeLast()
            reportBordersPassed(rate: format.sampleRate, endingAt: segment.startFrame, next: segment.token)
        }
        segments = []
        written = 0
        awaitingFirstFrame.remove(segment.token)
        deviceFailed(failure, holding: item, offset: offset, token: segment.token, resume: resume)
    }

    /// Publishes the heard position and reports any border the device has now played past.
    func publish(running: Bool = true) {
        guard let pcm, let format, !segments.isEmpty else { return }
        let delay = (try? pcm.delay()) ?? 0
        if delay > 0 { deviceKeepsTime = true }
        let played = max(0, written - delay)
        let rate = Double(format.sampleRate)
        while segments.count > 1 && played >= segments[1].startFrame {
            let previous = segments.removeFirst()
            emit(
                .transitioned(
                    from: previous.token, to: segments[0].token,
                    endPosition: previous.position + Double(segments[0].startFrame - previous.startFrame) / rate,
                    heard: true))
        }
        let audible = segments[0]
        let end = segments.count > 1 ? segments[1].startFrame : written
        pipe.publish(
            PositionSnapshot(
                token: audible.token,
                position: audible.position + Double(max(0, played - audible.startFrame)) / rate,
                writtenUpTo: audible.position + Double(end - audible.startFrame) / rate,
                at: .now, running: running && !devicePaused))
    }
}
