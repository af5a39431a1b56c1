import Foundation
import MediaDecoder
import TestSupport
import Wire
import XCTest

/// (d): a stream whose server accepts the request and sends nothing for a while (the reference
/// origin's `delayMs` fault) is STALLED before its first frame, and PLAYING once sound flows;
/// never PLAYING at a standstill.
final class SilentStreamTests: XCTestCase {
    func testStreamSilentBeforeItsFirstFrameIsStalled() async throws { try await silentStream(cpus: nil) }
    func testStreamSilentBeforeItsFirstFrameIsStalledOnOneCore() async throws { try await silentStream(cpus: "0") }

    private func silentStream(cpus: String?) async throws {
        let origin = try OriginProcess.start()
        defer { origin.discard() }
        let api = OriginAPI(origin: origin)
        try await api.injectFaults("/media/tr-8.mp3", [["delayMs": 8_000]])
        let h = try PlayerHarness()
        let client = try await h.start(
            pace: "realtime", extraArgs: ["--origin", origin.baseURL],
            environment: PlayerHarness.originCredentials, cpus: cpus)
        let log = EventLog(client)
        // The load answers after at most 5 s (the product still on its way); the origin is still silent.
        _ = try await h.call("player.load", PlayerHarness.product("tr-8"))
        let asked = Date()
        // Answered once the first frame is queued: called alongside, while the events are read.
        async let played = client.call("player.play", .object([:]), timeout: .seconds(10))
        let toStalled = try await log.until(timeout: 20) {
            $0.type == "PlaybackStateChanged" && ["STALLED", "PLAYING", "IDLE"].contains($0.data["playbackState"]?.stringValue ?? "")
        }
        let stalledAfter = Date().timeIntervalSince(asked)
        XCTAssertEqual(toStalled.last?.data["playbackState"], "STALLED", "\(toStalled.map(EventLog.describe))")
        XCTAssertEqual(h.captured.count, 0, "STALLED before any sound")
        let stalledStatus = try await h.status()
        XCTAssertEqual(stalledStatus["playbackState"], "STALLED", "\(stalledStatus)")
        _ = try await log.untilState("PLAYING", timeout: 20)
        let playingAfter = Date().timeIntervalSince(asked)
        _ = try await played
        try await h.waitFor("sound reaching the device") { h.captured.count > 0 }
        print(
            "silent stream (cpus \(cpus ?? "all")): STALLED after \(String(format: "%.2f", stalledAfter)) s, "
                + "PLAYING after \(String(format: "%.2f", playingAfter)) s (the origin was silent for 8 s from the load)")
        await h.stop()
    }
}

/// A streaming station's border that waits for its next item (the play queue answers late) is
/// STALLED while nothing is heard, then PLAYING with the item that came, the station going on.
final class StationBorderStallTests: XCTestCase {
    func testBorderWaitingForTheNextItemIsStalled() async throws {
        let origin = try OriginProcess.start()
        defer { origin.discard() }
        let api = OriginAPI(origin: origin)
        // The first play-queue request answers at once, the second (asked right after) 9 s late.
        try await api.injectFaults("/v1/stations/st-1/play", [["delayMs": 0], ["delayMs": 9_000]])
        let h = try PlayerHarness(captureEveryOpen: true)
        let client = try await h.start(
            pace: "realtime", extraArgs: ["--origin", origin.baseURL],
            environment: PlayerHarness.originCredentials)
        let log = EventLog(client)
        _ = try await h.call("station.tune", ["stationId": "st-1"])
        // Straight to the last item known: its end comes before the late answer.
        _ = try await h.call("station.skip")
        _ = try await h.call("station.skip")
        let toStall = try await log.until(timeout: 30) {
            $0.type == "PlaybackStateChanged" && ["STALLED", "IDLE"].contains($0.data["playbackState"]?.stringValue ?? "")
        }
        XCTAssertEqual(toStall.last?.data["playbackState"], "STALLED", "\(toStall.map(EventLog.describe))")
        let status = try await h.status()
        XCTAssertEqual(status["mediaProduct"]?["productId"], "tr-3", "\(status)")
        let resumed = try await log.until(timeout: 30) {
            $0.type == "PlaybackStateChanged" && ["PLAYING", "IDLE"].contains($0.data["playbackState"]?.stringValue ?? "")
        }
        XCTAssertEqual(resumed.last?.data["playbackState"], "PLAYING", "\(resumed.map(EventLog.describe))")
        let next = try await log.until(timeout: 30) { $0.type == "MediaProductTransition" }
        XCTAssertEqual(EventLog.describe(next.last!), "Transition:tr-3>tr-7b", "\(next.map(EventLog.describe))")
        // The item after the wait starts as any item starts, not faded in: where its audio
        // first reaches the device (found by its third tenth of a second, past any fade-in),
        // its first 0.2 s are there exactly as decoded.
        let decoder = try AudioDecoder(
            path: origin.dataDirectory.appendingPathComponent("media/tr-7b.flac").path,
            output: DecoderOutputFormat(sampleFormat: .s16))
        let tenth = 44_100 / 10 * 4
        var start: [UInt8] = []
        while start.count < 3 * tenth, let chunk = try decoder.nextChunk() { start += chunk.samples }
        let head = Array(start[0..<(2 * tenth)]), mark = Array(start[(2 * tenth)..<(3 * tenth)])
        var found: (capture: [UInt8], offset: Int)?
        try await h.waitFor("tr-7b's third tenth of a second in the capture") {
            found = h.captures.lazy.compactMap { capture in Self.offset(of: mark, in: capture, step: 4).map { (capture, $0) } }.first
            return found != nil
        }
        let (capture, offset) = try XCTUnwrap(found)
        XCTAssertGreaterThanOrEqual(offset, head.count, "tr-7b's start was written before")
        XCTAssertTrue(
            offset >= head.count && Array(capture[(offset - head.count)..<offset]) == head,
            "tr-7b's first 0.2 s reached the device unscaled")
        await h.stop()
    }

    /// Where `needle` first occurs in `haystack`, at an offset that is a multiple of `step`.
    static func offset(of needle: [UInt8], in haystack: [UInt8], step: Int) -> Int? {
        guard let first = needle.first, haystack.count >= needle.count else { return nil }
        return stride(from: 0, through: haystack.count - needle.count, by: step).first { offset in
            haystack[offset] == first && haystack[offset..<(offset + needle.count)].elementsEqual(needle)
        }
    }
}
