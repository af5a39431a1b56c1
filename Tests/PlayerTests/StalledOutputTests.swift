import Foundation
import MediaDecoder
import TestSupport
import Wire
import XCTest

/// STALLED means nothing is heard: a stream throttled below its bit rate is PLAYING while the
/// audio already buffered plays, STALLED only once the output has played everything it was given
/// (the capture holds no more than what was heard), and PLAYING again once enough is buffered —
/// in stretches, never slowed down: the capture is the whole track, sample for sample.
final class StalledOutputTests: XCTestCase {
    func testThrottledStreamIsStalledOnlyOnceTheOutputRanDry() async throws {
        let origin = try OriginProcess.start()
        defer { origin.discard() }
        let api = OriginAPI(origin: origin)
        let path = origin.dataDirectory.appendingPathComponent("media/tr-8.mp3").path
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber).intValue
        // tr-8 (MP3 at 320 kb/s) lasts 5 s; delivered over about 8 s (0.62 of its bit rate),
        // playback must wait for it more than once.
        try await api.injectFaults("/media/tr-8.mp3", [["bytesPerSecond": max(1_000, size / 8), "repeat": 10]])
        let h = try PlayerHarness()
        let client = try await h.start(pace: "realtime", extraArgs: ["--origin", origin.baseURL],
                                       environment: ["CASSETTE_CLIENT_TOKEN": "demo", "CASSETTE_CLIENT_SECRET": "demo"])
        let log = EventLog(client)
        _ = try await h.call("player.load", PlayerHarness.product("tr-8"))
        _ = try await h.call("player.play")

        var stalls = 0
        var worstUnheard = 0.0
        while true {
            let events = try await log.until(timeout: 30) {
                $0.type == "PlaybackStateChanged" && ["STALLED", "IDLE"].contains($0.data["playbackState"]?.stringValue ?? "")
            }
            guard events.last?.data["playbackState"]?.stringValue == "STALLED" else { break }
            // What the device was given and what was heard: equal once it ran dry.
            let status = try await h.status()
            let heard = status["assetPosition"]?.doubleValue ?? 0
            let given = Double(h.captured.count) / (44_100 * 4)
            if status["playbackState"]?.stringValue == "STALLED" {
                stalls += 1
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
        XCTAssertTrue(captured == expected, "nothing inserted or lost between the stalls")
        print("throttled stream: \(stalls) stall(s); at STALLED at most \(String(format: "%.3f", worstUnheard)) s given to the device was not heard yet")
        await h.stop()
    }
}
