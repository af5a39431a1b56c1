import Foundation
import TestSupport
import Wire
import XCTest

/// Sample-exact borders, proven from what reached the ALSA `file` PCM: one tone cut into three
/// tracks mid codec-frame, played as a station (the next item decoded ahead, one open PCM).
final class GaplessTests: XCTestCase {
    /// Plays the album as a station to its end and returns the capture.
    private func playAlbum(_ h: PlayerHarness, _ name: String, _ album: GaplessAlbum) async throws -> [Int16] {
        let ids = try h.addAlbumStation(name, album)
        let client = try await h.start()
        let log = EventLog(client)
        _ = try await h.call("station.tune", ["stationId": .string("st-\(name)")])
        let events = try await log.untilState("IDLE").map(EventLog.describe).filter { $0.hasPrefix("Transition") }
        XCTAssertEqual(
            events,
            [
                "Transition:->\(ids[0])", "Transition:\(ids[0])>\(ids[1])",
                "Transition:\(ids[1])>\(ids[2])", "Transition:\(ids[2])>-",
            ])
        return h.capturedSamples
    }

    /// FLAC: the capture is the uncut recording bit for bit — nothing inserted or dropped at
    /// either border, in one PCM.
    func testFlacAlbumIsBitExactAcrossBorders() async throws {
        let h = try PlayerHarness()
        let album = try GaplessAlbum.make(in: h, name: "fl", ext: "flac")
        let captured = try await playAlbum(h, "fl", album)
        XCTAssertEqual(captured.count, album.reference.count)
        let first = (0..<min(captured.count, album.reference.count)).first { captured[$0] != album.reference[$0] }
        XCTAssertNil(first, "first differing sample \(first ?? -1) (borders at frames \(album.borders))")
        print("gapless flac: \(BorderReport(captured: captured, album: album))")
    }

    /// MP3 (LAME/Xing delay and padding): exact length, no run of zeros, and the waveform at the
    /// borders matches the recording as closely as the codec does elsewhere (no phase jump).
    func testMP3AlbumHasNoGapNorPhaseJump() async throws {
        try await lossy("mp3")
    }

    /// AAC in MP4 (edit list; its end is trimmed here, libavformat keeps the padding): same checks.
    /// Lengths are whole 10 ms: FFmpeg 5.1's AAC encoder writes edit lists up to 17 samples off
    /// otherwise (the decoder follows the container, so the length would be off by as much).
    func testAACAlbumHasNoGapNorPhaseJump() async throws {
        try await lossy("m4a", lengths: [57_330, 61_740, 48_510])
    }

    private func lossy(_ ext: String, lengths: [Int] = [57_331, 61_007, 50_000]) async throws {
        let h = try PlayerHarness()
        let album = try GaplessAlbum.make(in: h, name: ext, ext: ext, lengths: lengths)
        let captured = try await playAlbum(h, ext, album)
        let report = BorderReport(captured: captured, album: album)
        print("gapless \(ext): \(report)")
        XCTAssertEqual(report.capturedFrames, album.frames, "sample-exact length: no padding left, nothing dropped")
        XCTAssertLessThan(report.longestZeroRun, 3, "no silence inserted")
        XCTAssertLessThan(report.bodyRMSError, 0.01, "aligned with the recording throughout")
        XCTAssertEqual(report.borderLags, album.borders.map { _ in 0 }, "no sample inserted or dropped at a border")
        // What remains at a border is the codec's own error at a track's edges (each track was
        // encoded alone), not the player's: the capture is the three decodes joined bit for bit.
        let decoded = try album.files.map { try h.decoded($0) }.reduce([], +)
        XCTAssertTrue(h.captured == decoded, "the device got exactly the decoder's output, track after track")
        // A lost padding frame or a gap would be ~0.5 here; the codec's edges stay under 0.1.
        for (index, error) in report.borderErrors.enumerated() {
            XCTAssertLessThan(error, 0.1, "border \(index) at frame \(album.borders[index])")
        }
    }

    /// The decoder alone trims what the container declares (AAC's trailing padding; an
    /// iTunSMPB-only file's delay and padding): the decoded length equals the cut.
    func testDecoderTrimsAACPaddingFromEditListAndITunSMPB() throws {
        let h = try PlayerHarness()
        let album = try GaplessAlbum.make(in: h, name: "sm", ext: "m4a", lengths: [50_715])
        XCTAssertEqual(try h.decoded(album.files[0]).count / 4, 50_715)
        // No edit list: only the iTunes tag says delay 1024, padding, 50 000 real frames.
        let cut = h.mediaDir + "/tracks/sm-0.raw"
        let tagged = "tracks/sm-tag.m4a"
        try GaplessAlbum.ffmpeg([
            "-f", "s16le", "-ar", "44100", "-ac", "2", "-i", cut, "-c:a", "aac", "-use_editlist", "0",
            "-movflags", "use_metadata_tags",
            "-metadata", "iTunSMPB= 00000000 00000400 00000000 000000000000C61B 00000000 00000000",
            h.mediaDir + "/" + tagged,
        ])
        let decoded = try h.decoded(tagged)
        XCTAssertEqual(decoded.count / 4, 50_715)
        let samples = decoded.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        // Away from the edges (the codec's own transients) it follows the recording closely; had
        // the 1024-frame delay stayed, the error would be of the signal's size (~16 000).
        let error = (4_096..<90_000).map { abs(Int(samples[$0]) - Int(album.reference[$0])) }.max() ?? 0
        XCTAssertLessThan(error, 1_000, "aligned with the recording (the delay was removed)")
    }
}
