import Foundation
import TestSupport
import Wire
import XCTest

@testable import player

/// Loudness normalization, measured on the capture: PV_a = 0.8 × min(10^((RG + preamp)/20), 1/peak)
/// when on, 1 when off or when the product lacks what the mode needs.
final class LoudnessTests: XCTestCase {
    private func rms(_ samples: ArraySlice<Int16>) -> Double {
        (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, samples.count))).squareRoot()
    }

    private func dB(_ ratio: Double) -> Double { 20 * log10(ratio) }

    /// Every mode on a tone of peak 0.5 with known tags; the 1/peak limit; a missing field.
    func testCapturedLevelEqualsPVInEachMode() async throws {
        let h = try PlayerHarness()
        let album = try GaplessAlbum.make(in: h, name: "ld", ext: "flac", lengths: [44_100])
        try h.addProduct("tr-l", file: album.files[0], seconds: 1)
        let client = try await h.start()
        let log = EventLog(client)
        let reference = rms(album.reference[...])
        // (mode, preamp, trackGain, trackPeak, albumGain, albumPeak, expected PV_a)
        let cases: [(String, Double, Double?, Double?, Double?, Double?, Double)] = [
            ("OFF", 4, -6, 0.5, -10, 0.5, 1),
            ("TRACK", 4, -6, 0.5, -10, 0.5, 0.8 * pow(10, -2.0 / 20)),
            ("ALBUM", 4, -6, 0.5, -10, 0.5, 0.8 * pow(10, -6.0 / 20)),
            ("TRACK", 0, -3, 0.5, nil, nil, 0.8 * pow(10, -3.0 / 20)),
            // +8 dB + 4 dB would be ×3.98; the peak of 0.5 allows ×2 only.
            ("TRACK", 4, 8, 0.5, nil, nil, 0.8 * 2),
            // ALBUM mode on a product without album values: played as is.
            ("ALBUM", 4, -6, 0.5, nil, nil, 1),
        ]
        var lines: [String] = []
        for (mode, preAmp, tg, tp, ag, ap, expected) in cases {
            try h.setGain("tr-l", trackGain: tg, trackPeak: tp, albumGain: ag, albumPeak: ap)
            _ = try await h.call(
                "player.config.set",
                [
                    "loudnessNormalizationMode": .string(mode),
                    "loudnessNormalizationPreAmp": .number(preAmp),
                ])
            _ = try await h.call("player.load", PlayerHarness.product("tr-l"))
            _ = try await h.call("player.play")
            _ = try await log.untilState("IDLE")
            let captured = h.capturedSamples
            XCTAssertEqual(captured.count, album.reference.count)
            let measured = dB(rms(captured[...]) / reference)
            lines.append(
                String(
                    format: "%@ preamp %.0f tg %@ ag %@: measured %.3f dB, PV_a %.3f dB", mode, preAmp,
                    tg.map { "\($0)" } ?? "-", ag.map { "\($0)" } ?? "-", measured, dB(expected)))
            XCTAssertEqual(measured, dB(expected), accuracy: 0.1, lines.last!)
        }
        print("loudness:\n  " + lines.joined(separator: "\n  "))
    }

    /// Three tracks with different track gains through one PCM: every sample carries its own
    /// track's gain, right up to the border sample and from the one after it.
    func testGainChangesExactlyAtTheBorder() async throws {
        let h = try PlayerHarness()
        let album = try GaplessAlbum.make(in: h, name: "gb", ext: "flac", lengths: [30_011, 29_989, 20_000])
        let ids = try h.addAlbumStation("gb", album)
        let gains = [-6.0, -12.0, -2.0]
        for (id, gain) in zip(ids, gains) { try h.setGain(id, trackGain: gain, trackPeak: 0.5) }
        let client = try await h.start()
        let log = EventLog(client)
        _ = try await h.call("player.config.set", ["loudnessNormalizationMode": "TRACK"])
        _ = try await h.call("station.tune", ["stationId": "st-gb"])
        _ = try await log.untilState("IDLE")
        let captured = h.capturedSamples
        XCTAssertEqual(captured.count, album.reference.count)
        let volumes = gains.map { 0.8 * min(pow(10, ($0 + 4) / 20), 2) }
        var track = 0, worst = 0.0
        var starts = [0] + album.borders
        starts.append(album.frames)
        for frame in 0..<min(captured.count, album.reference.count) / 2 {
            while frame >= starts[track + 1] { track += 1 }
            for channel in 0..<2 {
                let want = (Double(album.reference[2 * frame + channel]) * volumes[track]).rounded()
                worst = max(worst, abs(Double(captured[2 * frame + channel]) - want))
            }
        }
        XCTAssertLessThanOrEqual(worst, 1, "each sample scaled by its own track's PV_a (±1 LSB of rounding)")
        print(String(format: "loudness border: PV_a %@, worst sample error %.0f LSB", volumes.map { String(format: "%.4f", $0) }.joined(separator: "/"), worst))
    }

    /// A mode change while playing (wall-clock paced) is heard within 100 ms: the first scaled
    /// frame of the capture lies at most 100 ms after the position heard when the call returned.
    func testModeChangeIsHeardWithin100ms() async throws {
        let h = try PlayerHarness()
        let album = try GaplessAlbum.make(in: h, name: "mc", ext: "flac", lengths: [44_100 * 3])
        try h.addProduct("tr-m", file: album.files[0], seconds: 3)
        try h.setGain("tr-m", trackGain: -6, trackPeak: 0.5)
        let client = try await h.start(pace: "realtime")
        let log = EventLog(client)
        _ = try await h.call("player.load", PlayerHarness.product("tr-m"))
        _ = try await h.call("player.play")
        _ = try await log.untilState("PLAYING")
        try await Task.sleep(for: .milliseconds(900))
        let before = try await h.status()["assetPosition"]?.doubleValue ?? -1
        _ = try await h.call("player.config.set", ["loudnessNormalizationMode": "TRACK"])
        let after = try await h.status()["assetPosition"]?.doubleValue ?? -1
        _ = try await log.untilState("IDLE", timeout: 10)
        let captured = h.capturedSamples
        guard let changed = (0..<min(captured.count, album.reference.count)).first(where: { captured[$0] != album.reference[$0] }) else {
            return XCTFail("the gain never changed")
        }
        let heardAt = Double(changed / 2) / Double(GaplessAlbum.rate)
        print(
            String(
                format: "loudness mode change: request heard at %.3f–%.3f s, first scaled frame at %.3f s (%.0f ms after the reply)",
                before, after, heardAt, (heardAt - after) * 1000))
        XCTAssertGreaterThanOrEqual(heardAt, before - 0.005, "not before the request")
        XCTAssertLessThanOrEqual(heardAt, after + 0.1, "heard within 100 ms")
        let volume = 0.8 * pow(10, -2.0 / 20)
        let tail = (changed + 4_410 * 2)..<min(captured.count, changed + 44_100)
        let ratio = rms(captured[tail]) / rms(album.reference[tail])
        XCTAssertEqual(dB(ratio), dB(volume), accuracy: 0.1)
    }

    /// The formula itself, including the fields that disable it.
    func testVolumeFormula() {
        let tags = LoudnessTags(trackGain: -6, trackPeak: 0.5, albumGain: 3, albumPeak: 0.9)
        XCTAssertEqual(LoudnessSettings(mode: .off).volume(for: tags), 1)
        XCTAssertEqual(LoudnessSettings(mode: .track, preAmp: 4).volume(for: tags), 0.8 * pow(10, -0.1), accuracy: 1e-12)
        XCTAssertEqual(LoudnessSettings(mode: .album, preAmp: 4).volume(for: tags), 0.8 / 0.9, accuracy: 1e-12)
        XCTAssertEqual(LoudnessSettings(mode: .track).volume(for: LoudnessTags(trackGain: -6)), 1)
        XCTAssertEqual(LoudnessSettings(mode: .track).volume(for: LoudnessTags(trackGain: -6, trackPeak: 0)), 1)
        XCTAssertEqual(LoudnessSettings(mode: .album).volume(for: LoudnessTags(trackGain: -6, trackPeak: 0.5)), 1)
    }
}
