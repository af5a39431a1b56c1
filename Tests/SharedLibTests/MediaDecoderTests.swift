import AudioFormat
import Foundation
import MediaDecoder
import XCTest

/// AudioDecoder on real files made by the ffmpeg CLI in a temporary folder: a 2 s, 440 Hz
/// stereo sine at 44.1 kHz in FLAC, MP3, AAC (M4A), Opus (48 kHz) and WAV.
final class MediaDecoderTests: XCTestCase {
    private var folder: URL!
    private static let duration = 2.0

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("cassette-decoder-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: folder)
    }

    /// Encodes the test sine to `name` (the extension picks the container and codec).
    private func sine(_ name: String, _ extra: [String] = []) throws -> String {
        let path = folder.appendingPathComponent(name).path
        try ffmpeg(
            ["-f", "lavfi", "-i", "sine=frequency=440:duration=\(Self.duration):sample_rate=44100", "-ac", "2"]
                + extra + [path])
        return path
    }

    private func ffmpeg(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y"] + arguments
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw XCTSkip("ffmpeg \(arguments) failed") }
    }

    /// Decodes everything; returns the chunks.
    private func decodeAll(_ decoder: AudioDecoder) throws -> [AudioChunk] {
        var chunks: [AudioChunk] = []
        while let chunk = try decoder.nextChunk() { chunks.append(chunk) }
        return chunks
    }

    func testFLACFormatInfo() throws {
        let decoder = try AudioDecoder(path: sine("a.flac"))
        let info = decoder.info
        XCTAssertEqual(info.codecName, "flac")
        XCTAssertEqual(info.containerName, "flac")
        XCTAssertEqual(info.sampleRate, 44_100)
        XCTAssertEqual(info.channels, 2)
        XCTAssertEqual(info.bitsPerSample, 16)
        XCTAssertEqual(info.durationSeconds ?? 0, Self.duration, accuracy: 0.05)
        XCTAssertGreaterThan(info.bitRate ?? 0, 0)
        XCTAssertEqual(decoder.outputFormat, DecodedFormat(sampleFormat: .s16, sampleRate: 44_100, channels: 2))
    }

    func testLossyFormatInfo() throws {
        let mp3 = try AudioDecoder(path: sine("a.mp3", ["-b:a", "128k"])).info
        XCTAssertEqual(mp3.codecName, "mp3")
        XCTAssertEqual(mp3.containerName, "mp3")
        XCTAssertNil(mp3.bitsPerSample)
        XCTAssertEqual(Double(mp3.bitRate ?? 0), 128_000, accuracy: 16_000)

        let aac = try AudioDecoder(path: sine("a.m4a")).info
        XCTAssertEqual(aac.codecName, "aac")
        XCTAssertTrue(aac.containerName.contains("mp4"), aac.containerName)
        XCTAssertEqual(aac.durationSeconds ?? 0, Self.duration, accuracy: 0.1)

        let opus = try AudioDecoder(path: sine("a.opus")).info
        XCTAssertEqual(opus.codecName, "opus")
        XCTAssertEqual(opus.containerName, "ogg")
        XCTAssertEqual(opus.sampleRate, 48_000)
        XCTAssertEqual(opus.initialPadding, 312, "libopus's pre-skip, for gapless trimming later")
    }

    func testEveryFormatDecodesToItsDuration() throws {
        for name in ["a.flac", "a.mp3", "a.m4a", "a.opus", "a.wav"] {
            let decoder = try AudioDecoder(path: sine(name), output: DecoderOutputFormat(sampleFormat: .s16, sampleRate: 44_100, channels: 2))
            let chunks = try decodeAll(decoder)
            let frames = chunks.reduce(0) { $0 + $1.frameCount }
            XCTAssertEqual(Double(frames), Self.duration * 44_100, accuracy: 0.03 * 44_100, name)
            XCTAssertTrue(chunks.allSatisfy { $0.samples.count == $0.frameCount * 4 }, name)
            // The sine is there: not silence, not clipped garbage.
            let peak =
                chunks.flatMap { chunk in
                    chunk.samples.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
                }.map { abs(Int($0)) }.max() ?? 0
            XCTAssertGreaterThan(peak, 1_000, name)
            XCTAssertNil(try decoder.nextChunk(), "stays at the end")
        }
    }

    func testResamplesAndDownmixesToTheRequestedFormat() throws {
        let decoder = try AudioDecoder(path: sine("a.opus"), output: DecoderOutputFormat(sampleFormat: .float, sampleRate: 22_050, channels: 1))
        XCTAssertEqual(decoder.outputFormat, DecodedFormat(sampleFormat: .float, sampleRate: 22_050, channels: 1))
        let chunks = try decodeAll(decoder)
        let frames = chunks.reduce(0) { $0 + $1.frameCount }
        XCTAssertEqual(Double(frames), Self.duration * 22_050, accuracy: 0.03 * 22_050)
        XCTAssertTrue(chunks.allSatisfy { $0.samples.count == $0.frameCount * 4 })
        let samples = chunks.flatMap { chunk in chunk.samples.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) } }
        XCTAssertLessThanOrEqual(samples.map { abs($0) }.max() ?? 2, 1.0)
        XCTAssertGreaterThan(samples.map { abs($0) }.max() ?? 0, 0.05)
    }

    func testS32OutputOfWAVEqualsTheSourceSamplesShiftedUp() throws {
        let path = try sine("a.wav", ["-bitexact", "-map_metadata", "-1"])
        let decoder16 = try AudioDecoder(path: path)
        let decoded16 = try decodeAll(decoder16).flatMap(\.samples)
        let file = try Data(contentsOf: URL(fileURLWithPath: path))
        let dataTag = file.range(of: Data("data".utf8))!
        XCTAssertEqual(Data(decoded16), file[(dataTag.upperBound + 4)...], "PCM decodes bit-exactly")

        let decoder32 = try AudioDecoder(path: path, output: DecoderOutputFormat(sampleFormat: .s32))
        let s16 = decoded16.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        let s32 = try decodeAll(decoder32).flatMap(\.samples).withUnsafeBytes { Array($0.bindMemory(to: Int32.self)) }
        XCTAssertEqual(s32, s16.map { Int32($0) << 16 })
    }

    func testPresentationTimesStartAtZeroAndFollowTheFrames() throws {
        for name in ["a.flac", "a.mp3"] {
            let decoder = try AudioDecoder(path: sine(name))
            let chunks = try decodeAll(decoder)
            XCTAssertEqual(chunks.first?.presentationTime ?? -1, 0, accuracy: 0.03, name)
            for (previous, next) in zip(chunks, chunks.dropFirst()) {
                let expected = previous.presentationTime + Double(previous.frameCount) / 44_100
                XCTAssertEqual(next.presentationTime, expected, accuracy: 0.005, name)
            }
        }
    }

    func testSeekStartsOutputAtTheTarget() throws {
        for name in ["a.flac", "a.mp3", "a.m4a", "a.opus"] {
            let decoder = try AudioDecoder(path: sine(name), output: DecoderOutputFormat(sampleRate: 44_100))
            _ = try decoder.nextChunk()
            try decoder.seek(to: 1.25)
            let chunks = try decodeAll(decoder)
            XCTAssertEqual(chunks.first?.presentationTime ?? -1, 1.25, accuracy: 0.01, name)
            let frames = chunks.reduce(0) { $0 + $1.frameCount }
            XCTAssertEqual(Double(frames), 0.75 * 44_100, accuracy: 0.03 * 44_100, name)
        }
    }

    func testSeekBackAfterTheEndDecodesAgain() throws {
        let decoder = try AudioDecoder(path: sine("a.flac"))
        let first = try decodeAll(decoder).reduce(0) { $0 + $1.frameCount }
        try decoder.seek(to: 0)
        let again = try decodeAll(decoder).reduce(0) { $0 + $1.frameCount }
        XCTAssertEqual(again, first)
    }

    func testSeekPastTheEndEndsTheStream() throws {
        let decoder = try AudioDecoder(path: sine("a.mp3"))
        try decoder.seek(to: 60)
        XCTAssertNil(try decoder.nextChunk())
        try decoder.seek(to: 1.5)
        XCTAssertEqual(try decoder.nextChunk()?.presentationTime ?? -1, 1.5, accuracy: 0.01)
    }

    func testCoverArtStreamIsIgnored() throws {
        let cover = folder.appendingPathComponent("cover.png").path
        try ffmpeg(["-f", "lavfi", "-i", "color=c=blue:size=32x32", "-frames:v", "1", cover])
        let path = folder.appendingPathComponent("tagged.mp3").path
        try ffmpeg([
            "-f", "lavfi", "-i", "sine=frequency=440:duration=\(Self.duration)", "-i", cover,
            "-map", "0:a", "-map", "1:v", "-c:v", "png", "-disposition:v", "attached_pic", path,
        ])
        let decoder = try AudioDecoder(path: path)
        XCTAssertEqual(decoder.info.codecName, "mp3")
        let frames = try decodeAll(decoder).reduce(0) { $0 + $1.frameCount }
        XCTAssertEqual(Double(frames), Self.duration * 44_100, accuracy: 0.03 * 44_100)
    }

    func testMissingFileThrowsFileNotFound() {
        XCTAssertThrowsError(try AudioDecoder(path: folder.appendingPathComponent("none.flac").path)) {
            XCTAssertEqual(($0 as? DecoderError)?.name, "FileNotFound")
        }
    }

    func testNonMediaFileThrowsInvalidFile() throws {
        let path = folder.appendingPathComponent("notes.flac")
        try Data(String(repeating: "this is not audio at all\n", count: 400).utf8).write(to: path)
        XCTAssertThrowsError(try AudioDecoder(path: path.path)) {
            let error = $0 as? DecoderError
            XCTAssertEqual(error?.name, "InvalidFile")
            XCTAssertNotNil(error?.ffmpegError)
            XCTAssertFalse(error?.message.isEmpty ?? true)
        }
    }

    func testCorruptedFLACFailsWithATypedError() throws {
        let path = try sine("broken.flac")
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        // Keep the header, trash every frame.
        for index in stride(from: 8_192, to: bytes.count, by: 1) { bytes[index] = UInt8(truncatingIfNeeded: index &* 131) }
        try bytes.write(to: URL(fileURLWithPath: path))
        do {
            let decoder = try AudioDecoder(path: path)
            let frames = try decodeAll(decoder).reduce(0) { $0 + $1.frameCount }
            XCTAssertLessThan(frames, Int(Self.duration * 44_100), "damaged frames are skipped, not invented")
        } catch let error as DecoderError {
            XCTAssertTrue(["InvalidFile", "DecodeFailed"].contains(error.name), "\(error)")
        }
    }

    func testImageWithoutAudioThrowsNoAudioStream() throws {
        let path = folder.appendingPathComponent("cover.png").path
        try ffmpeg(["-f", "lavfi", "-i", "color=c=red:size=16x16", "-frames:v", "1", path])
        XCTAssertThrowsError(try AudioDecoder(path: path)) {
            XCTAssertEqual(($0 as? DecoderError)?.name, "NoAudioStream")
        }
    }
}
