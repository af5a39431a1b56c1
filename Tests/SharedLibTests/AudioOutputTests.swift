import AudioFormat
import AudioOutput
import Foundation
import XCTest

/// PCMOutput through real ALSA PCMs: the `null` PCM from the system configuration, and a `file`
/// PCM defined by configuration text that records the raw samples into a temporary file.
final class AudioOutputTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("cassette-alsa-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: folder)
    }

    /// A `file` PCM named `cassette_capture` writing raw interleaved samples to `path`.
    private func fileConfig(_ path: String) -> String {
        """
        pcm.cassette_capture {
            type file
            slave.pcm "null"
            file "\(path)"
            format "raw"
        }
        """
    }

    func testNullPCMNegotiatesRequestedParameters() throws {
        let output = try PCMOutput(device: "null", configuration: PCMConfiguration(format: .s16, sampleRate: 48_000, channels: 2))
        XCTAssertEqual(output.parameters.format, .s16)
        XCTAssertEqual(output.parameters.sampleRate, 48_000)
        XCTAssertEqual(output.parameters.channels, 2)
        XCTAssertEqual(output.parameters.bytesPerFrame, 4)
        XCTAssertGreaterThan(output.parameters.bufferFrames, 0)
        XCTAssertGreaterThan(output.parameters.periodFrames, 0)
        XCTAssertLessThanOrEqual(output.parameters.periodFrames, output.parameters.bufferFrames)
        try output.write(frames: [Int16](repeating: 0, count: 4_800 * 2))
        try output.drain()
        XCTAssertEqual(try output.delay(), 0)
        output.close()
    }

    func testBufferAndPeriodSizesAreConfigurable() throws {
        let config = PCMConfiguration(format: .float, sampleRate: 44_100, channels: 1, bufferFrames: 4_096, periodFrames: 1_024)
        let output = try PCMOutput(device: "null", configuration: config)
        XCTAssertEqual(output.parameters.bufferFrames, 4_096)
        XCTAssertEqual(output.parameters.periodFrames, 1_024)
    }

    func testFilePCMRecordsExactlyTheSamplesWritten() throws {
        for format in PCMSampleFormat.allCases {
            let path = folder.appendingPathComponent("out-\(format).raw").path
            let config = PCMConfiguration(format: format, sampleRate: 44_100, channels: 2)
            let output = try PCMOutput(device: "cassette_capture", alsaConfig: fileConfig(path), configuration: config)
            let frames = 10_000
            var written = Data()
            switch format {
            case .s16:
                let samples = (0..<frames * 2).map { Int16(truncatingIfNeeded: $0 &* 37) }
                try output.write(frames: samples)
                written = samples.withUnsafeBytes { Data($0) }
            case .s32:
                let samples = (0..<frames * 2).map { Int32(truncatingIfNeeded: $0 &* 104_729) }
                try output.write(frames: samples)
                written = samples.withUnsafeBytes { Data($0) }
            case .float:
                let samples = (0..<frames * 2).map { Float(sin(Double($0) / 10)) }
                try samples.withUnsafeBufferPointer { try output.write(frames: $0) }
                written = samples.withUnsafeBytes { Data($0) }
            }
            try output.drain()
            output.close()
            let recorded = try Data(contentsOf: URL(fileURLWithPath: path))
            XCTAssertEqual(recorded.count, frames * 2 * format.bytesPerSample, "\(format)")
            XCTAssertEqual(recorded, written, "\(format)")
        }
    }

    func testRawByteWritesMustBeWholeFrames() throws {
        let output = try PCMOutput(device: "null", configuration: PCMConfiguration(format: .s16, channels: 2))
        XCTAssertThrowsError(try [UInt8](repeating: 0, count: 6).withUnsafeBytes { try output.write(bytes: $0) }) {
            XCTAssertEqual(($0 as? AudioOutputError)?.name, "InvalidSamples")
        }
        try [UInt8](repeating: 0, count: 8).withUnsafeBytes { try output.write(bytes: $0) }
    }

    func testSamplesOfTheWrongTypeAreRejected() throws {
        let output = try PCMOutput(device: "null", configuration: PCMConfiguration(format: .s16))
        XCTAssertThrowsError(try output.write(frames: [Float](repeating: 0, count: 4))) {
            XCTAssertEqual(($0 as? AudioOutputError)?.name, "InvalidSamples")
        }
    }

    func testUnknownDeviceThrowsOpenFailed() {
        XCTAssertThrowsError(try PCMOutput(device: "cassette_no_such_pcm", configuration: PCMConfiguration())) {
            XCTAssertEqual(($0 as? AudioOutputError)?.name, "OpenFailed")
            XCTAssertNotNil(($0 as? AudioOutputError)?.alsaError)
        }
    }

    func testMalformedConfigThrowsInvalidConfig() {
        XCTAssertThrowsError(try PCMOutput(device: "x", alsaConfig: "pcm.x { type file ", configuration: PCMConfiguration())) {
            XCTAssertEqual(($0 as? AudioOutputError)?.name, "InvalidConfig")
        }
    }

    func testWriteAfterCloseThrowsClosed() throws {
        let output = try PCMOutput(device: "null", configuration: PCMConfiguration())
        output.close()
        output.close()
        XCTAssertThrowsError(try output.write(frames: [Int16](repeating: 0, count: 2))) {
            XCTAssertEqual(($0 as? AudioOutputError)?.name, "Closed")
        }
    }

    func testPauseResumeAndDropKeepTheOutputUsable() throws {
        let path = folder.appendingPathComponent("paused.raw").path
        let config = PCMConfiguration(format: .s16, sampleRate: 8_000, channels: 1, bufferFrames: 800)
        let output = try PCMOutput(device: "cassette_capture", alsaConfig: fileConfig(path), configuration: config)
        try output.write(frames: [Int16](repeating: 1, count: 2_000))
        try output.pause(true)
        try output.pause(false)
        try output.write(frames: [Int16](repeating: 2, count: 2_000))
        try output.drop()
        try output.write(frames: [Int16](repeating: 3, count: 2_000))
        try output.drain()
        output.close()
        let recorded = try Data(contentsOf: URL(fileURLWithPath: path))
        XCTAssertGreaterThan(recorded.count, 0)
        XCTAssertLessThanOrEqual(recorded.count, 6_000 * 2)
    }

    func testPauseStopsTheRealtimeClock() throws {
        let config = PCMConfiguration(format: .s16, sampleRate: 8_000, channels: 1, bufferFrames: 8_000, pacing: .realtime)
        let output = try PCMOutput(device: "null", configuration: config)
        let started = ContinuousClock.now
        try output.write(frames: [Int16](repeating: 0, count: 3_200)) // 0.4 s, within the 1 s lead
        try output.pause(true)
        let before = try output.delay()
        Thread.sleep(forTimeInterval: 0.3)
        let after = try output.delay()
        XCTAssertGreaterThan(before, 1_600)
        XCTAssertGreaterThan(after, before - 400, "no audio 'played' while paused")
        try output.pause(false)
        try output.drain()
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - started, .milliseconds(550), "0.4 s of audio plus 0.3 s of pause")
    }

    func testRealtimePacingTakesAboutAsLongAsTheAudio() throws {
        let config = PCMConfiguration(format: .s16, sampleRate: 44_100, channels: 2, bufferFrames: 4_410, pacing: .realtime)
        let output = try PCMOutput(device: "null", configuration: config)
        let chunk = [Int16](repeating: 0, count: 1_000 * 2)
        let started = ContinuousClock.now
        for _ in 0..<22 { try output.write(frames: chunk) } // 22_000 frames ≈ 0.5 s
        let writing = ContinuousClock.now - started
        XCTAssertGreaterThan(try output.delay(), 0, "audio is still 'playing'")
        try output.drain()
        let total = ContinuousClock.now - started
        XCTAssertGreaterThanOrEqual(writing, .milliseconds(300), "writes were throttled to real time")
        XCTAssertGreaterThanOrEqual(total, .milliseconds(400))
        XCTAssertLessThan(total, .seconds(3))
        XCTAssertEqual(try output.delay(), 0)
    }

    func testDevicePacingOnNullIsNotThrottled() throws {
        let output = try PCMOutput(device: "null", configuration: PCMConfiguration(format: .s16, sampleRate: 44_100, channels: 2))
        let started = ContinuousClock.now
        try output.write(frames: [Int16](repeating: 0, count: 44_100 * 2)) // 1 s of audio
        try output.drain()
        XCTAssertLessThan(ContinuousClock.now - started, .milliseconds(900))
    }
}
