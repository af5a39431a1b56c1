import MediaDecoder

/// A fade-in after the sound was cut: the device reopened after it failed, or it ran dry (the
/// source could not keep up: STALLED) and the same track plays on. The gain rises linearly from
/// 0 to the product's volume (1, or the normalized gain) over `duration` of audio: frame i of the
/// fade-in is scaled by volume × i / `frames(sampleRate:)`, so that playing on does not start with
/// a burst at full level. Starts of a track, gapless borders, seeks and a pause ending are not
/// cuts and are not faded in.
struct SoftStart {
    /// How long the fade-in lasts.
    static let duration = 0.1

    /// The fade-in's length in frames at `sampleRate`.
    static func frames(sampleRate: Int) -> Int { max(1, Int(duration * Double(sampleRate))) }

    private var total = 0
    private var done = 0

    var isActive: Bool { done < total }

    /// Starts a fade-in at `sampleRate`.
    mutating func begin(sampleRate: Int) {
        total = Self.frames(sampleRate: sampleRate)
        done = 0
    }

    mutating func cancel() { done = total }

    /// Scales `bytes` (whole frames of `format`) by the ramp at its place, times `volume`, and
    /// moves the ramp on.
    mutating func apply(volume: Double, to bytes: UnsafeMutableRawBufferPointer, format: DecodedFormat) {
        let frames = bytes.count / format.bytesPerFrame
        let from = volume * Double(done) / Double(total)
        let rampFrames = min(frames, total - done)
        let to = volume * Double(done + rampFrames) / Double(total)
        LoudnessGain.ramp(from: from, to: to, frames: rampFrames, channels: format.channels, in: bytes, format: format.sampleFormat)
        if rampFrames < frames {
            let rest = UnsafeMutableRawBufferPointer(rebasing: bytes[(rampFrames * format.bytesPerFrame)...])
            LoudnessGain.apply(volume, to: rest, format: format.sampleFormat)
        }
        done += rampFrames
    }
}

extension LoudnessGain {
    /// Scales the first `frames` frames of `bytes` by a gain moving linearly from `from` (first
    /// frame) towards `to` (the frame after the last), rounding and clamping like `apply`.
    static func ramp(
        from: Double, to: Double, frames: Int, channels: Int, in bytes: UnsafeMutableRawBufferPointer,
        format: AudioSampleFormat
    ) {
        guard frames > 0 else { return }
        let step = (to - from) / Double(frames)
        switch format {
        case .s16:
            let samples = bytes.bindMemory(to: Int16.self)
            for frame in 0..<frames {
                let g = from + step * Double(frame)
                for c in 0..<channels {
                    let i = frame * channels + c
                    samples[i] = Int16(max(-32_768, min(32_767, (Double(samples[i]) * g).rounded(.toNearestOrEven))))
                }
            }
        case .s32:
            let samples = bytes.bindMemory(to: Int32.self)
            for frame in 0..<frames {
                let g = from + step * Double(frame)
                for c in 0..<channels {
                    let i = frame * channels + c
                    samples[i] = Int32(max(-2_147_483_648, min(2_147_483_647, (Double(samples[i]) * g).rounded(.toNearestOrEven))))
                }
            }
        case .float:
            let samples = bytes.bindMemory(to: Float.self)
            for frame in 0..<frames {
                let g = Float(from + step * Double(frame))
                for c in 0..<channels { samples[frame * channels + c] *= g }
            }
        }
    }
}
