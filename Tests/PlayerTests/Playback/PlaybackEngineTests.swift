import Foundation
import TestSupport
import Wire
import XCTest

/// The PlaybackEngine through the real socket, heard through an ALSA `file` PCM: what the
/// device got, the exact event sequences, positions, pause, seek, errors.
final class PlaybackEngineTests: XCTestCase {
    /// One product played to its end: the capture is the decoded track bit for bit, and the
    /// events are exactly NOT_PLAYING, transition in, PLAYING, transition out, IDLE.
    func testCaptureEqualsDecodedTrackAndEventsAreExact() async throws {
        let h = try PlayerHarness()
        let file = try h.makeTrack("tr-a", seconds: 1.5)
        try h.addProduct("tr-a", file: file)
        let client = try await h.start()
        let log = EventLog(client)
        _ = try await h.call("player.load", PlayerHarness.product("tr-a"))
        _ = try await h.call("player.play")
        let events = try await log.untilState("IDLE")
        XCTAssertEqual(
            events.map(EventLog.describe),
            ["State:NOT_PLAYING", "Transition:->tr-a", "State:PLAYING", "Transition:tr-a>-", "State:IDLE"])
        let context = events[1].data["playbackContext"]
        XCTAssertEqual(context?["productId"]?.stringValue, "tr-a")
        XCTAssertEqual(context?["audioSampleRate"]?.intValue, 44_100)
        XCTAssertEqual(context?["referenceId"]?.stringValue, "ref-tr-a")
        XCTAssertNotNil(context?["playbackSessionId"]?.stringValue)
        let expected = try h.decoded(file)
        XCTAssertEqual(h.captured.count, expected.count)
        XCTAssertTrue(h.captured == expected, "the device got exactly the decoded samples")
        let status = try await h.status()
        XCTAssertEqual(status["playbackState"]?.stringValue, "IDLE")
        XCTAssertEqual(status["mediaProduct"], .null)
    }

    /// setNext before the end: an implicit transition with no gap — the capture is track A
    /// then track B, sample for sample — and the transition events name both products.
    func testImplicitTransitionIsGaplessWithExactEvents() async throws {
        let h = try PlayerHarness()
        let a = try h.makeTrack("tr-a", seconds: 1, frequency: 440)
        let b = try h.makeTrack("tr-b", seconds: 1, frequency: 660)
        try h.addProduct("tr-a", file: a)
        try h.addProduct("tr-b", file: b)
        let client = try await h.start()
        let log = EventLog(client)
        _ = try await h.call("player.load", PlayerHarness.product("tr-a"))
        _ = try await h.call("player.setNext", PlayerHarness.product("tr-b"))
        _ = try await h.call("player.play")
        let events = try await log.untilState("IDLE")
        XCTAssertEqual(
            events.map(EventLog.describe),
            [
                "State:NOT_PLAYING", "Transition:->tr-a", "State:PLAYING", "Transition:tr-a>tr-b",
                "Transition:tr-b>-", "State:IDLE",
            ])
        let expected = try h.decoded(a) + h.decoded(b)
        XCTAssertEqual(h.captured.count, expected.count)
        XCTAssertTrue(h.captured == expected, "A then B with nothing inserted or dropped")
    }

    /// With the device paced to the wall clock, assetPosition follows what was played, pause
    /// stops both the frames and the position, and play resumes them.
    func testPositionFollowsPlayedFramesAndPauseStopsFrames() async throws {
        let h = try PlayerHarness()
        let file = try h.makeTrack("tr-a", seconds: 6)
        try h.addProduct("tr-a", file: file, seconds: 6)
        let client = try await h.start(pace: "realtime")
        let log = EventLog(client)
        _ = try await h.call("player.load", PlayerHarness.product("tr-a"))
        _ = try await h.call("player.play")
        _ = try await log.untilState("PLAYING")
        // Wait for the first frames, then measure the position against the wall clock.
        var p0 = 0.0
        let began = Date()
        while p0 <= 0.2, Date().timeIntervalSince(began) < 5 {
            p0 = try await h.status()["assetPosition"]?.doubleValue ?? 0
        }
        let t0 = Date()
        try await Task.sleep(for: .milliseconds(1000))
        let p1 = try await h.status()["assetPosition"]?.doubleValue ?? 0
        let elapsed = Date().timeIntervalSince(t0)
        XCTAssertEqual(p1 - p0, elapsed, accuracy: 0.05, "position moves with the audio heard")

        _ = try await h.call("player.pause")
        _ = try await log.untilState("NOT_PLAYING")
        try await Task.sleep(for: .milliseconds(200))
        let pausedSize = h.captured.count
        let pausedAt = try await h.status()["assetPosition"]?.doubleValue ?? -1
        try await Task.sleep(for: .milliseconds(600))
        XCTAssertEqual(h.captured.count, pausedSize, "no frame reaches the device while paused")
        let stillAt = try await h.status()["assetPosition"]?.doubleValue ?? -1
        XCTAssertEqual(stillAt, pausedAt, accuracy: 0.001)

        _ = try await h.call("player.play")
        _ = try await log.untilState("PLAYING")
        try await Task.sleep(for: .milliseconds(500))
        XCTAssertGreaterThan(h.captured.count, pausedSize, "frames flow again after play")
        _ = try await h.call("player.reset")
        _ = try await log.untilState("IDLE")
    }

    /// A seek lands on its target: the position reads the target at once, and what the device
    /// gets next is the decoded track from there.
    func testSeekLandsOnTarget() async throws {
        let h = try PlayerHarness()
        let file = try h.makeTrack("tr-a", seconds: 3)
        try h.addProduct("tr-a", file: file, seconds: 3)
        let client = try await h.start()
        let log = EventLog(client)
        _ = try await h.call("player.load", PlayerHarness.product("tr-a"))
        _ = try await log.until { $0.type == "MediaProductTransition" }
        _ = try await h.call("player.seek", ["position": 1.25])
        let position = try await h.status()["assetPosition"]?.doubleValue ?? -1
        XCTAssertEqual(position, 1.25, accuracy: 0.05)
        _ = try await h.call("player.play")
        _ = try await log.untilState("IDLE")
        let fromTarget = try h.decoded(file, from: 1.25)
        let captured = h.captured
        // 50 ms at 44.1 kHz stereo s16 = 8820 bytes.
        XCTAssertEqual(captured.count, fromTarget.count, accuracy: 8_820)
        XCTAssertTrue(captured == fromTarget, "the device gets the track from exactly the seek target")
    }

    /// A seek while playing (wall-clock paced) is heard at once: the position reads the target.
    func testSeekWhilePlayingMovesThePosition() async throws {
        let h = try PlayerHarness()
        let file = try h.makeTrack("tr-a", seconds: 8)
        try h.addProduct("tr-a", file: file, seconds: 8)
        // A device-sized buffer: the 60 ms default (small for fast loudness changes) can run dry
        // on a loaded CI machine, which would move the position, not the seek, under test.
        let client = try await h.start(pace: "realtime", config: #"{"player":{"bufferMilliseconds":500}}"#)
        let log = EventLog(client)
        _ = try await h.call("player.load", PlayerHarness.product("tr-a"))
        _ = try await h.call("player.play")
        _ = try await log.untilState("PLAYING")
        try await Task.sleep(for: .milliseconds(400))
        _ = try await h.call("player.seek", ["position": 5.0])
        try await Task.sleep(for: .milliseconds(700))
        let t0 = Date()
        let position = try await h.status()["assetPosition"]?.doubleValue ?? -1
        XCTAssertEqual(position, 5.0 + 0.7 + Date().timeIntervalSince(t0) / 2, accuracy: 0.06)
        _ = try await h.call("player.reset")
        let events = try await log.untilState("IDLE")
        XCTAssertEqual(events.map(EventLog.describe).last, "State:IDLE")
    }

    /// A damaged file: the product becomes active, then the error, then IDLE. A missing file:
    /// the error (FileMissing) and IDLE without a transition to it.
    func testCorruptAndMissingFilesRaiseAnErrorThenIdle() async throws {
        let h = try PlayerHarness()
        try Data((0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 7919) }).write(to: URL(fileURLWithPath: h.mediaDir + "/tracks/bad.flac"))
        try h.addProduct("tr-bad", file: "tracks/bad.flac")
        try h.addProduct("tr-gone", file: "tracks/gone.flac")
        let client = try await h.start()
        let log = EventLog(client)
        // Each fails before any sound: the load answers its error, and the error event comes as well.
        await assertLoadRefused(h, "tr-bad", "CorruptFile")
        _ = try await h.call("player.play")
        var events = try await log.untilState("IDLE").map(EventLog.describe)
        XCTAssertEqual(events.suffix(2), ["CorruptFile", "State:IDLE"], "\(events)")
        XCTAssertEqual(events.first, "State:NOT_PLAYING")

        await assertLoadRefused(h, "tr-gone", "FileMissing")
        _ = try await h.call("player.play")
        events = try await log.untilState("IDLE").map(EventLog.describe)
        XCTAssertEqual(events, ["State:NOT_PLAYING", "FileMissing", "State:IDLE"])
        let status = try await h.status()
        XCTAssertEqual(status["playbackState"]?.stringValue, "IDLE")
        // Controls in IDLE are ignored, not errors.
        _ = try await h.call("player.play")
        let after = try await h.status()
        XCTAssertEqual(after["playbackState"]?.stringValue, "IDLE")
    }

    /// Bad params name the field; the persisted config survives a restart.
    func testConfigIsPersistedAndValidated() async throws {
        let h = try PlayerHarness()
        try await h.start()
        let defaults = try await h.call("player.config.get")
        XCTAssertEqual(defaults["loudnessNormalizationPreAmp"]?.doubleValue, 4)
        XCTAssertEqual(defaults["offlineMode"]?.boolValue, false)
        _ = try await h.call(
            "player.config.set",
            [
                "loudnessNormalizationMode": "TRACK", "offlineMode": true,
                "streamingQualityCellular": "LOW",
            ])
        do {
            _ = try await h.call("player.config.set", ["streamingQualityWifi": "ULTRA"])
            XCTFail("an unknown quality is refused")
        } catch let error as RPCError {
            XCTAssertEqual(error.name, "InvalidConfig")
            XCTAssertTrue(error.message.contains("streamingQualityWifi"))
        }
        do {
            _ = try await h.call("player.seek", ["position": "soon"])
            XCTFail("a position that is not a number is refused")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, -32602)
            XCTAssertTrue(error.message.contains("position"))
        }
        await h.stop()
        try await h.start()
        let config = try await h.call("player.config.get")
        XCTAssertEqual(config["loudnessNormalizationMode"]?.stringValue, "TRACK")
        XCTAssertEqual(config["offlineMode"]?.boolValue, true)
        XCTAssertEqual(config["streamingQualityCellular"]?.stringValue, "LOW")
        let status = try await h.status()
        XCTAssertEqual(status["offlineMode"]?.boolValue, true)
    }
}

/// `player.load` of `product` answers the error `name`.
func assertLoadRefused(_ h: PlayerHarness, _ product: String, _ name: String, file: StaticString = #filePath, line: UInt = #line) async {
    do {
        _ = try await h.call("player.load", PlayerHarness.product(product))
        XCTFail("the load of \(product) answers \(name)", file: file, line: line)
    } catch let error as RPCError {
        XCTAssertEqual(error.name, name, file: file, line: line)
    } catch {
        XCTFail("\(error)", file: file, line: line)
    }
}
