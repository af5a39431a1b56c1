import AudioFormat
import Foundation
import MediaDecoder
import XCTest

/// AudioDecoder(source:) — FFmpeg reading through a custom AVIOContext — against the same files
/// read by path: FLAC, MP3, AAC (M4A), Opus and WAV made by the ffmpeg CLI.
final class MediaDecoderSourceTests: XCTestCase {
    private var folder: URL!
    private static let formats = ["a.flac", "a.mp3", "a.m4a", "a.opus", "a.wav"]

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("cassette-source-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: folder)
    }

    private func sine(_ name: String) throws -> String {
        let path = folder.appendingPathComponent(name).path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y", "-f", "lavfi",
            "-i", "sine=frequency=440:duration=2:sample_rate=44100", "-ac", "2", path,
        ]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw XCTSkip("ffmpeg could not make \(name)") }
        return path
    }

    private func decodeAll(_ decoder: AudioDecoder) throws -> [UInt8] {
        var bytes: [UInt8] = []
        while let chunk = try decoder.nextChunk() { bytes += chunk.samples }
        return bytes
    }

    func testEveryFormatReadThroughASourceEqualsReadingByPath() throws {
        for name in Self.formats {
            let path = try sine(name)
            let byPath = try AudioDecoder(path: path)
            let source = try FileByteSource(path: path)
            let bySource = try AudioDecoder(source: source)
            XCTAssertEqual(bySource.info, byPath.info, name)
            XCTAssertEqual(bySource.outputFormat, byPath.outputFormat, name)
            let expected = try decodeAll(byPath)
            XCTAssertGreaterThan(expected.count, 100_000, name)
            let same = try decodeAll(bySource) == expected
            XCTAssertTrue(same, "\(name) through a source decodes to the same samples as by path")
        }
    }

    func testSeekThroughASourceLandsWhereSeekByPathDoes() throws {
        for name in Self.formats {
            let path = try sine(name)
            let byPath = try AudioDecoder(path: path)
            let bySource = try AudioDecoder(source: try FileByteSource(path: path))
            _ = try byPath.nextChunk()
            _ = try bySource.nextChunk()
            try byPath.seek(to: 1.25)
            try bySource.seek(to: 1.25)
            let first = try XCTUnwrap(try bySource.nextChunk(), name)
            XCTAssertEqual(first.presentationTime, 1.25, accuracy: 0.01, name)
            let sameFirst = try first.samples == byPath.nextChunk()?.samples
            let sameRest = try decodeAll(bySource) == decodeAll(byPath)
            XCTAssertTrue(sameFirst && sameRest, "\(name) after a seek: the same samples as by path")
        }
    }

    /// A source that hands out a few bytes per read (as a slow stream would); FLAC and Opus also
    /// without a size. (An MP3 of unknown size loses LAME's end trimming, as FFmpeg reading a pipe does.)
    func testTricklingSourceDecodesTheSame() throws {
        for (name, hideSize) in [("a.flac", true), ("a.opus", true), ("a.mp3", false), ("a.m4a", false)] {
            let path = try sine(name)
            let trickle = TrickleSource(inner: try FileByteSource(path: path), maxRead: 333, hideSize: hideSize)
            let decoder = try AudioDecoder(source: trickle)
            let same = try decodeAll(decoder) == decodeAll(AudioDecoder(path: path))
            XCTAssertTrue(same, "\(name) through 333-byte reads decodes to the same samples")
            XCTAssertGreaterThan(trickle.reads, 50, name)
        }
    }

    func testSourceFailingMidStreamThrowsSourceFailedWithItsError() throws {
        let path = try sine("a.flac")
        let size = try XCTUnwrap(FileByteSource(path: path).size)
        let failing = TrickleSource(inner: try FileByteSource(path: path), maxRead: 4096, hideSize: false, failAfter: size / 2)
        let decoder = try AudioDecoder(source: failing)
        var caught: DecoderError?
        do {
            while try decoder.nextChunk() != nil {}
        } catch {
            caught = error
        }
        XCTAssertEqual(caught?.name, "SourceFailed")
        XCTAssertEqual((caught?.sourceError as? ByteSourceError)?.name, "NetworkGone")
    }

    func testSourceFailingAtOpenThrowsSourceFailed() throws {
        let path = try sine("a.m4a")
        let failing = TrickleSource(inner: try FileByteSource(path: path), maxRead: 4096, hideSize: false, failAfter: 100)
        XCTAssertThrowsError(try AudioDecoder(source: failing)) {
            let error = $0 as? DecoderError
            XCTAssertEqual(error?.name, "SourceFailed")
            XCTAssertEqual((error?.sourceError as? ByteSourceError)?.name, "NetworkGone")
        }
    }

    func testNonMediaBytesThroughASourceThrowInvalidFile() throws {
        let path = folder.appendingPathComponent("notes.txt")
        try Data(String(repeating: "not audio\n", count: 500).utf8).write(to: path)
        XCTAssertThrowsError(try AudioDecoder(source: try FileByteSource(path: path.path))) {
            XCTAssertEqual(($0 as? DecoderError)?.name, "InvalidFile")
        }
    }

    func testClosedFileSourceThrowsAndMissingFileIsNamed() throws {
        let source = try FileByteSource(path: try sine("a.wav"))
        source.close()
        source.close()
        var buffer = [UInt8](repeating: 0, count: 16)
        XCTAssertThrowsError(try buffer.withUnsafeMutableBytes { try source.read(into: $0) }) {
            XCTAssertEqual(($0 as? ByteSourceError)?.name, "SourceClosed")
        }
        XCTAssertThrowsError(try FileByteSource(path: folder.appendingPathComponent("none.flac").path)) {
            XCTAssertEqual(($0 as? ByteSourceError)?.name, "FileNotFound")
        }
    }
}

/// Wraps a source: at most `maxRead` bytes per read, optionally no size, optionally failing
/// once `failAfter` bytes were handed out.
private final class TrickleSource: ByteSource, @unchecked Sendable {
    let inner: FileByteSource
    let maxRead: Int
    let hideSize: Bool
    let failAfter: Int64?
    private(set) var reads = 0
    private var position: Int64 = 0

    init(inner: FileByteSource, maxRead: Int, hideSize: Bool, failAfter: Int64? = nil) {
        self.inner = inner
        self.maxRead = maxRead
        self.hideSize = hideSize
        self.failAfter = failAfter
    }

    var size: Int64? { hideSize ? nil : inner.size }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        reads += 1
        if let failAfter, position >= failAfter {
            throw ByteSourceError(name: "NetworkGone", message: "the test cut the source at \(failAfter)")
        }
        let count = try inner.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer.prefix(maxRead)))
        position += Int64(count)
        return count
    }

    func seek(to offset: Int64) throws {
        try inner.seek(to: offset)
        position = offset
    }

    func close() { inner.close() }
}
