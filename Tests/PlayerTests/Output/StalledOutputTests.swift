import Foundation
import MediaDecoder
import TestSupport
import Wire
import XCTest

/// STALLED means nothing is heard: a stream throttled below its bit rate is PLAYING while the
/// audio already buffered plays, STALLED only once the output has played everything it was given
/// (the capture holds no more than what was heard), and PLAYING again once enough is buffered —
/// in stretches, never slowed down: the capture is the whole track, sample for sample, except
/// that each stretch after a stall is faded in over 0.1 s (`SoftStartRamps`).
final class StalledOutputTests: XCTestCase {
    static let rate = 44_100

    func testThrottledStreamIsStalledOnlyOnceTheOutputRanDry() async throws { try await throttled(cpus: nil) }
    func testThrottledStreamIsStalledOnlyOnceTheOutputRanDryOnOneCore() async throws { try await throttled(cpus: "0") }

    private func throttled(cpus: String?) async throws {
        let origin = try OriginProcess.start()
        defer { origin.discard() }
        let api = OriginAPI(origin: origin)
        let path = origin.dataDirectory.appendingPathComponent("media/tr-8.mp3").path
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber).intValue
        // tr-8 (MP3 at 320 kb/s) lasts 5 s; delivered over about 8 s (0.62 of its bit rate),
        // playback must wait for it more than once.
        try await api.injectFaults("/media/tr-8.mp3", [["bytesPerSecond": max(1_000, size / 8), "repeat": 10]])
        let h = try PlayerHarness()
        let client = try await h.start(
            pace: "realtime", extraArgs: ["--origin", origin.baseURL],
            environment: PlayerHarness.originCredentials, cpus: cpus)
        let log = EventLog(client)
        _ = try await h.call("player.load", PlayerHarness.product("tr-8"))
        _ = try await h.call("player.play")
        // The first frame (a wait for the first bytes before it is STALLED too, but nothing was cut).
        _ = try await log.untilState("PLAYING", timeout: 30)

        var stalls = 0
        var stalledAt: [Double] = []
        var worstUnheard = 0.0
        while true {
            let events = try await log.until(timeout: 30) {
                $0.type == "PlaybackStateChanged" && ["STALLED", "IDLE"].contains($0.data["playbackState"]?.stringValue ?? "")
            }
            guard events.last?.data["playbackState"]?.stringValue == "STALLED" else { break }
            stalls += 1
            // What the device was given and what was heard: equal once it ran dry.
            let status = try await h.status()
            let heard = status["assetPosition"]?.doubleValue ?? 0
            let given = Double(h.captured.count) / Double(Self.rate * 4)
            if status["playbackState"]?.stringValue == "STALLED" {
                stalledAt.append(heard)
                worstUnheard = max(worstUnheard, given - heard)
                XCTAssertLessThan(given - heard, 0.3, "STALLED while \(given - heard) s given to the device were not heard yet")
            }
            _ = try await log.untilState("PLAYING")
        }
        XCTAssertGreaterThanOrEqual(stalls, 1, "a stream at about half its bit rate stalls")
        let decoder = try AudioDecoder(path: path, output: DecoderOutputFormat(sampleFormat: .s16))
        var expected: [UInt8] = []
        while let chunk = try decoder.nextChunk() { expected += chunk.samples }
        let captured = h.captured
        XCTAssertEqual(captured.count, expected.count, "the whole track was played")
        let ramps = SoftStartRamps(captured: h.capturedSamples, decoded: Self.samples(expected), sampleRate: Self.rate)
        XCTAssertNil(ramps.mismatch, "nothing inserted or lost between the stalls, nothing scaled but the fade-ins")
        XCTAssertEqual(
            ramps.starts.count, stalls,
            "one fade-in per stall, at \(ramps.startSeconds(sampleRate: Self.rate)) s; "
                + "stalled at \(stalledAt) s")
        // Each fade-in begins where the sound was cut: the position heard while STALLED.
        for heard in stalledAt {
            XCTAssertTrue(
                ramps.starts.contains { abs(Double($0) / Double(Self.rate) - heard) < 0.005 },
                "a fade-in where the stall at \(heard) s ended: \(ramps.startSeconds(sampleRate: Self.rate))")
        }
        print(
            "throttled stream (cpus \(cpus ?? "all")): \(stalls) stall(s), fade-ins at \(ramps.startSeconds(sampleRate: Self.rate)) s "
                + "(worst \(ramps.worstRampError) LSB off the ramp); at STALLED at most \(String(format: "%.3f", worstUnheard)) s "
                + "given to the device was not heard yet")
        await h.stop()
    }

    func testResumedStreamIsFadedIn() async throws { try await resumed(normalized: false, cpus: nil) }
    func testResumedStreamIsFadedInOnOneCore() async throws { try await resumed(normalized: false, cpus: "0") }
    func testResumedStreamIsFadedInToTheNormalizedGain() async throws { try await resumed(normalized: true, cpus: nil) }
    func testResumedStreamIsFadedInToTheNormalizedGainOnOneCore() async throws { try await resumed(normalized: true, cpus: "0") }

    /// A stream whose first request is answered at once and the rest 3 s late: the output runs
    /// dry once (STALLED), and the sound that follows rises from silence to the track's volume
    /// over 0.1 s — with `TRACK` normalization, to the normalized gain, which the rest keeps.
    private func resumed(normalized: Bool, cpus: String?) async throws {
        let origin = try OriginProcess.start()
        defer { origin.discard() }
        let api = OriginAPI(origin: origin)
        let path = origin.dataDirectory.appendingPathComponent("media/tr-8.mp3").path
        try await api.injectFaults("/media/tr-8.mp3", [[:], ["delayMs": 3_000, "repeat": 10]])
        let h = try PlayerHarness()
        let client = try await h.start(
            pace: "realtime", extraArgs: ["--origin", origin.baseURL],
            environment: PlayerHarness.originCredentials, cpus: cpus)
        let log = EventLog(client)
        var volume = 1.0
        if normalized {
            let info = try api.json(try await api.get("/v1/playbackinfo/tr-8?mode=stream"))
            let gain = try XCTUnwrap((info.object("replayGain")["trackGain"] as? NSNumber)?.doubleValue)
            let peak = try XCTUnwrap((info.object("replayGain")["trackPeak"] as? NSNumber)?.doubleValue)
            volume = 0.8 * min(pow(10, (gain + 4) / 20), 1 / peak)
            XCTAssertNotEqual(volume, 1, accuracy: 0.01, "tr-8 is normalized to another level")
            _ = try await h.call("player.config.set", ["loudnessNormalizationMode": "TRACK", "loudnessNormalizationPreAmp": 4])
        }
        _ = try await h.call("player.load", PlayerHarness.product("tr-8"))
        _ = try await h.call("player.play")
        _ = try await log.untilState("PLAYING", timeout: 30)
        _ = try await log.untilState("STALLED", timeout: 30)
        let stalled = try await h.status()
        _ = try await log.untilState("PLAYING", timeout: 30)
        let rest = try await log.untilState("IDLE", timeout: 30)
        XCTAssertFalse(
            rest.contains { $0.type == "PlaybackStateChanged" && $0.data["playbackState"] == "STALLED" },
            "one stall: \(rest.map(EventLog.describe))")

        let decoder = try AudioDecoder(path: path, output: DecoderOutputFormat(sampleFormat: .s16))
        var expected: [UInt8] = []
        while let chunk = try decoder.nextChunk() { expected += chunk.samples }
        XCTAssertEqual(h.captured.count, expected.count, "the whole track was played")
        let decoded = Self.samples(expected)
        let captured = h.capturedSamples
        let ramps = SoftStartRamps(captured: captured, decoded: decoded, sampleRate: Self.rate, volume: volume)
        XCTAssertNil(ramps.mismatch, "the capture is the track at its volume but for the fade-in")
        XCTAssertEqual(ramps.starts.count, 1, "one fade-in, after the stall: at \(ramps.startSeconds(sampleRate: Self.rate)) s")
        let start = try XCTUnwrap(ramps.starts.first)
        let heard = stalled["assetPosition"]?.doubleValue ?? -1
        XCTAssertEqual(Double(start) / Double(Self.rate), heard, accuracy: 0.005, "the fade-in begins where the sound was cut")
        XCTAssertEqual(ramps.rampFrames, Self.rate / 10, "over 0.1 s")

        // The level before the stall and after the fade-in is the track's volume; inside, it rises.
        func level(_ frames: Range<Int>, of samples: [Int16]) -> Double {
            let slice = samples[(frames.lowerBound * 2)..<min(samples.count, frames.upperBound * 2)]
            return (slice.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, slice.count))).squareRoot()
        }
        let n = ramps.rampFrames
        let after = (start + n)..<(start + 3 * n)
        XCTAssertEqual(
            level(after, of: captured) / level(after, of: decoded), volume, accuracy: 0.001,
            "the fade-in ends at the track's volume and stays there")
        let quarters = (0..<4).map { q in
            level((start + q * n / 4)..<(start + (q + 1) * n / 4), of: captured) / level((start + q * n / 4)..<(start + (q + 1) * n / 4), of: decoded)
        }
        XCTAssertEqual(quarters, quarters.sorted(), "the gain rises through the fade-in: \(quarters)")
        XCTAssertLessThan(quarters[0], volume / 4 + 0.01, "the fade-in starts from silence: \(quarters)")
        print(
            "resumed stream (\(normalized ? "TRACK" : "OFF"), cpus \(cpus ?? "all")): stalled at \(heard) s, fade-in from "
                + "\(ramps.startSeconds(sampleRate: Self.rate)[0]) s over \(n) frames to volume \(String(format: "%.4f", volume)), "
                + "gain per quarter \(quarters.map { String(format: "%.3f", $0) }), worst \(ramps.worstRampError) LSB off the ramp")
        await h.stop()
    }

    static func samples(_ bytes: [UInt8]) -> [Int16] {
        bytes.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }
}
