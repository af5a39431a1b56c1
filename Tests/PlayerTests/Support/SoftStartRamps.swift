import Foundation
import MediaDecoder

@testable import player

/// Reads the soft starts out of a capture of 16-bit samples: wherever the capture differs from
/// the decoded track at its volume, a fade-in must begin there or just before (on frames that
/// round alike, e.g. silence), frame i of it scaled by volume × i / N over N frames
/// (`SoftStart.frames`), ±1 LSB of rounding. Everywhere else the capture must be the decoded
/// track at its volume exactly (`LoudnessGain.apply`: untouched at volume 1).
struct SoftStartRamps {
    /// The frames where a fade-in begins (its frame at gain 0), in order.
    private(set) var starts: [Int] = []
    /// The largest difference inside a fade-in from decoded × volume × i / N, in LSB.
    private(set) var worstRampError = 0
    /// The first frame that is neither the expected one nor part of a fade-in, if any.
    private(set) var mismatch: String?
    /// The fade-in's length in frames.
    let rampFrames: Int

    init(captured: [Int16], decoded: [Int16], channels: Int = 2, sampleRate: Int, volume: Double = 1) {
        rampFrames = SoftStart.frames(sampleRate: sampleRate)
        var full = decoded
        full.withUnsafeMutableBytes { LoudnessGain.apply(volume, to: $0, format: .s16) }
        let frames = min(captured.count, decoded.count) / channels
        let n = rampFrames

        func exact(_ frame: Int) -> Bool {
            (0..<channels).allSatisfy { captured[frame * channels + $0] == full[frame * channels + $0] }
        }
        /// The worst error of a fade-in starting at `start`, or nil past 1 LSB.
        func rampError(from start: Int) -> Int? {
            var worst = 0
            for i in 0..<min(n, frames - start) {
                let gain = volume * Double(i) / Double(n)
                for c in 0..<channels {
                    let index = (start + i) * channels + c
                    let want = max(-32_768, min(32_767, (Double(decoded[index]) * gain).rounded(.toNearestOrEven)))
                    let error = Int(abs(Double(captured[index]) - want))
                    if error > 1 { return nil }
                    worst = max(worst, error)
                }
            }
            return worst
        }

        var frame = 0
        var earliest = 0
        while frame < frames {
            if exact(frame) {
                frame += 1
                continue
            }
            // The first frame that differs: a fade-in began here or on the equal frames before it.
            // The latest start that fits is taken (earlier ones differ only on frames that round alike).
            var found: (start: Int, error: Int)?
            for start in stride(from: frame, through: max(earliest, frame - n + 1), by: -1) {
                if let error = rampError(from: start) {
                    found = (start, error)
                    break
                }
            }
            guard let found else {
                let range = (frame * channels)..<((frame + 1) * channels)
                mismatch =
                    "frame \(frame) (\(String(format: "%.4f", Double(frame) / Double(sampleRate))) s): captured "
                    + "\(Array(captured[range])), expected \(Array(full[range])) and no fade-in of \(n) frames explains it"
                return
            }
            starts.append(found.start)
            worstRampError = max(worstRampError, found.error)
            frame = found.start + n
            earliest = frame
        }
    }

    /// Where each fade-in begins, in seconds.
    func startSeconds(sampleRate: Int) -> [String] {
        starts.map { String(format: "%.3f", Double($0) / Double(sampleRate)) }
    }
}
