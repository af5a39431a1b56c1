import Foundation
import GRDB
import XCTest

@testable import StateDB

/// One continuous recording (a tone made by ffmpeg) cut into tracks at sample-exact points
/// that fall mid codec-frame, each encoded on its own, so any delay, padding or dropped sample
/// at a border shows up against the uncut reference.
struct GaplessAlbum {
    static let rate = 44_100
    /// Interleaved stereo s16 of the whole recording.
    let reference: [Int16]
    /// Track lengths in frames; the borders are their running sums.
    let lengths: [Int]
    /// Files relative to the media folder, in album order.
    let files: [String]

    var borders: [Int] { lengths.dropLast().reduce(into: [Int]()) { $0.append(($0.last ?? 0) + $1) } }
    var frames: Int { lengths.reduce(0, +) }

    /// Makes the recording with `amplitude` and cuts it into `lengths`, encoded as `ext`
    /// ("flac", "mp3", "m4a") with ffmpeg's default encoder for it.
    static func make(
        in harness: PlayerHarness, name: String, ext: String, lengths: [Int] = [57_331, 61_007, 50_000],
        frequency: Int = 441, amplitude: Double = 0.5
    ) throws -> GaplessAlbum {
        let total = lengths.reduce(0, +)
        let dir = harness.mediaDir + "/tracks"
        let raw = "\(dir)/\(name).raw"
        let seconds = Double(total) / Double(rate) + 0.1
        try ffmpeg([
            "-f", "lavfi", "-i", "sine=frequency=\(frequency):sample_rate=\(rate):duration=\(seconds)",
            "-af", "volume=\(amplitude * 8)", "-ac", "2", "-f", "s16le", raw,
        ])
        // lavfi's sine is at 1/8 of full scale; the volume filter scales it to `amplitude`.
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: raw)))
        bytes = Array(bytes.prefix(total * 4))
        guard bytes.count == total * 4 else { throw XCTSkip("ffmpeg made \(bytes.count) bytes, wanted \(total * 4)") }
        var files: [String] = []
        var start = 0
        for (index, length) in lengths.enumerated() {
            let cut = "\(dir)/\(name)-\(index).raw"
            try Data(bytes[(start * 4)..<((start + length) * 4)]).write(to: URL(fileURLWithPath: cut))
            let relative = "tracks/\(name)-\(index).\(ext)"
            try ffmpeg(["-f", "s16le", "-ar", "\(rate)", "-ac", "2", "-i", cut] + encoderArgs(ext) + [harness.mediaDir + "/" + relative])
            files.append(relative)
            start += length
        }
        let samples = bytes.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        return GaplessAlbum(reference: samples, lengths: lengths, files: files)
    }

    private static func encoderArgs(_ ext: String) -> [String] {
        switch ext {
        case "mp3": ["-c:a", "libmp3lame", "-b:a", "192k"]
        case "m4a": ["-c:a", "aac", "-b:a", "192k"]
        default: ["-sample_fmt", "s16"]
        }
    }

    static func ffmpeg(_ args: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y"] + args
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw XCTSkip("ffmpeg \(args.suffix(1)) failed") }
    }
}

/// What a capture looks like against the reference, around each border and overall.
struct BorderReport: CustomStringConvertible {
    /// Largest |capture − reference| within ±`window` frames of each border, full scale = 1.
    var borderErrors: [Double]
    /// RMS and largest |capture − reference| away from the borders (the codec's own error).
    var bodyRMSError: Double
    var bodyMaxError = 0.0
    /// For each border, the shift (frames) that best aligns the capture with the reference in the
    /// 1024 frames after it: 0 unless samples were inserted or dropped there (a phase jump).
    var borderLags: [Int] = []
    /// Longest run of frames where both channels are exactly 0.
    var longestZeroRun: Int
    var capturedFrames: Int

    var description: String {
        let borders = borderErrors.map { String(format: "%.4f", $0) }.joined(separator: ", ")
        return
            "frames \(capturedFrames), border max error [\(borders)], lags after borders \(borderLags), body RMS error \(String(format: "%.5f", bodyRMSError)) max \(String(format: "%.4f", bodyMaxError)), longest zero run \(longestZeroRun)"
    }

    init(captured: [Int16], album: GaplessAlbum, window: Int = 512) {
        let frames = min(captured.count, album.reference.count) / 2
        capturedFrames = captured.count / 2
        func error(_ frame: Int) -> Double {
            max(
                abs(Double(captured[2 * frame]) - Double(album.reference[2 * frame])),
                abs(Double(captured[2 * frame + 1]) - Double(album.reference[2 * frame + 1]))) / 32_768
        }
        borderErrors = album.borders.map { border in
            (max(0, border - window)..<min(frames, border + window)).map(error).max() ?? 1
        }
        var sum = 0.0, count = 0
        for frame in stride(from: 0, to: frames, by: 1) where !album.borders.contains(where: { abs($0 - frame) < window }) {
            let e = error(frame)
            sum += e * e
            count += 1
            bodyMaxError = max(bodyMaxError, e)
        }
        borderLags = album.borders.map { border in
            func cost(_ lag: Int) -> Double {
                (border..<min(frames - 16, border + 1_024)).reduce(0.0) { total, frame in
                    let c = frame + lag
                    guard c >= 0, c < captured.count / 2 else { return total + 1 }
                    let d = (Double(captured[2 * c]) - Double(album.reference[2 * frame])) / 32_768
                    return total + d * d
                }
            }
            return (-16...16).min { cost($0) < cost($1) } ?? 99
        }
        bodyRMSError = count > 0 ? (sum / Double(count)).squareRoot() : 1
        var run = 0, longest = 0
        for frame in 0..<(captured.count / 2) {
            if captured[2 * frame] == 0 && captured[2 * frame + 1] == 0 {
                run += 1
                longest = max(longest, run)
            } else {
                run = 0
            }
        }
        longestZeroRun = longest
    }
}

extension PlayerHarness {
    /// The capture as interleaved s16 samples.
    var capturedSamples: [Int16] { captured.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) } }

    /// Sets the ReplayGain values of a product the way the downloader stores them.
    func setGain(_ id: String, trackGain: Double?, trackPeak: Double?, albumGain: Double? = nil, albumPeak: Double? = nil) throws {
        try catalog.pool.write { db in
            try db.execute(
                sql: "UPDATE mediaItems SET trackGain = ?, trackPeak = ?, albumGain = ?, albumPeak = ? WHERE id = ?",
                arguments: [trackGain, trackPeak, albumGain, albumPeak, id])
        }
    }

    /// A station holding the album's tracks (ids `<name>-0`…), played through with no origin.
    func addAlbumStation(_ name: String, _ album: GaplessAlbum) throws -> [String] {
        let ids = album.files.indices.map { "\(name)-\($0)" }
        try addStation("st-\(name)", name: name, items: zip(ids, album.files).map { ($0, $1, "verified") })
        return ids
    }
}
