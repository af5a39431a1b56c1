import Foundation
import MediaDecoder

/// The ReplayGain values of one product (dB and linear peak), as the catalog or the playback
/// manifest gives them. Travels with the product's job so the gain is known per sample.
struct LoudnessTags: Sendable, Equatable {
    var trackGain: Double?
    var trackPeak: Double?
    var albumGain: Double?
    var albumPeak: Double?
}

/// The app's choice (`player.config.set`): which gain, and the pre-amplification in dB.
struct LoudnessSettings: Sendable, Equatable {
    var mode: PlayerConfig.LoudnessMode = .off
    var preAmp: Double = 4

    /// TIDAL's volume factor when normalization is on: the loudness target is 0.8 of full scale.
    static let normalizedVolume = 0.8

    /// The actual volume PV_a for a product: 1 when off; 0.8 × S_f when on, with
    /// S_f = min(10^((RG + preamp)/20), 1/peak), RG and peak from the track or the album.
    /// A product missing the gain or peak that the mode needs (or with a peak ≤ 0) plays at 1,
    /// unnormalized, rather than at a guessed level.
    func volume(for tags: LoudnessTags) -> Double {
        let gain: Double?, peak: Double?
        switch mode {
        case .off: return 1
        case .track: (gain, peak) = (tags.trackGain, tags.trackPeak)
        case .album: (gain, peak) = (tags.albumGain, tags.albumPeak)
        }
        guard let gain, let peak, gain.isFinite, peak.isFinite, peak > 0 else { return 1 }
        let scale = min(pow(10, (gain + preAmp) / 20), 1 / peak)
        return Self.normalizedVolume * scale
    }

    init(mode: PlayerConfig.LoudnessMode = .off, preAmp: Double = 4) {
        self.mode = mode
        self.preAmp = preAmp
    }

    init(_ config: PlayerConfig) {
        self.init(mode: config.loudnessNormalizationMode, preAmp: config.loudnessNormalizationPreAmp)
    }
}

/// Scales interleaved PCM in place on the output thread. A volume of exactly 1 leaves the bytes
/// untouched (bit-exact playback when normalization is off); otherwise each sample is scaled,
/// rounded to nearest and clamped (S_f ≤ 1/peak keeps correct tags far from the clamp).
enum LoudnessGain {
    static func apply(_ volume: Double, to bytes: UnsafeMutableRawBufferPointer, format: AudioSampleFormat) {
        guard volume != 1, volume.isFinite, volume >= 0 else { return }
        switch format {
        case .s16:
            let samples = bytes.bindMemory(to: Int16.self)
            let g = Float(volume)
            for i in samples.indices {
                let scaled = (Float(samples[i]) * g).rounded(.toNearestOrEven)
                samples[i] = Int16(max(-32_768, min(32_767, scaled)))
            }
        case .s32:
            let samples = bytes.bindMemory(to: Int32.self)
            for i in samples.indices {
                let scaled = (Double(samples[i]) * volume).rounded(.toNearestOrEven)
                samples[i] = Int32(max(-2_147_483_648, min(2_147_483_647, scaled)))
            }
        case .float:
            let samples = bytes.bindMemory(to: Float.self)
            let g = Float(volume)
            for i in samples.indices { samples[i] *= g }
        }
    }
}
