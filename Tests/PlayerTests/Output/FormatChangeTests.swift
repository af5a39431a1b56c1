import Foundation
import TestSupport
import Wire
import XCTest

/// A border where the sample rate changes (AAC at 44.1 kHz, then Opus at 48 kHz): the device is
/// reopened for the new format, and the transition, the status and both plays are as at any
/// other border.
final class FormatChangeTests: XCTestCase {
    func testRateChangeReopensTheDeviceWithExactTransitionStatusAndPlays() async throws {
        let h = try PlayerHarness(captureEveryOpen: true)
        let a = try h.makeTrack("tr-a", seconds: 1, frequency: 440, format: .aac44)
        let b = try h.makeTrack("tr-b", seconds: 1.5, frequency: 660, format: .opus48)
        try h.addProduct("tr-a", file: a)
        try h.addProduct("tr-b", file: b)
        try h.describe("tr-a", format: .aac44, seconds: 1)
        try h.describe("tr-b", format: .opus48, seconds: 1.5)
        let client = try await h.start(pace: "realtime")
        let log = EventLog(client)
        _ = try await h.call("player.load", PlayerHarness.product("tr-a"))
        _ = try await h.call("player.setNext", PlayerHarness.product("tr-b"))
        _ = try await h.call("player.play")

        let toB = try await log.until {
            $0.type == "MediaProductTransition" && $0.data["activeMediaProduct"]?["productId"]?.stringValue == "tr-b"
        }
        XCTAssertEqual(toB.map(EventLog.describe), ["State:NOT_PLAYING", "Transition:->tr-a", "State:PLAYING", "Transition:tr-a>tr-b"])
        let context = toB.last?.data["playbackContext"]
        XCTAssertEqual(context?["productId"]?.stringValue, "tr-b")
        XCTAssertEqual(context?["audioSampleRate"]?.intValue, 48_000)
        XCTAssertEqual(context?["audioCodec"]?.stringValue, "opus")

        // The status follows at once, and the position moves on in the new track.
        let first = try await h.status()
        XCTAssertEqual(first["playbackState"]?.stringValue, "PLAYING")
        XCTAssertEqual(first["mediaProduct"]?["productId"]?.stringValue, "tr-b")
        XCTAssertEqual(first["playbackContext"]?["audioSampleRate"]?.intValue, 48_000)
        XCTAssertEqual(first["nextMediaProduct"], .null)
        let p0 = first["assetPosition"]?.doubleValue ?? -1
        XCTAssertGreaterThanOrEqual(p0, 0)
        XCTAssertLessThan(p0, 0.5)
        try await Task.sleep(for: .milliseconds(500))
        let later = try await h.status()
        XCTAssertEqual(later["mediaProduct"]?["productId"]?.stringValue, "tr-b")
        let p1 = later["assetPosition"]?.doubleValue ?? -1
        XCTAssertGreaterThan(p1, p0 + 0.2, "the position moves in the 48 kHz track")
        XCTAssertLessThan(p1, 1.5)

        let rest = try await log.untilState("IDLE")
        // The transition into another rate is also a quality change.
        XCTAssertEqual(rest.map(EventLog.describe), ["PlaybackQualityChanged", "Transition:tr-b>-", "State:IDLE"])
        XCTAssertEqual(rest.first?.data["playbackContext"]?["audioSampleRate"]?.intValue, 48_000)

        // One PCM per format, each getting exactly its track's decoded samples.
        let captures = h.captures
        XCTAssertEqual(captures.count, 2, "the device was opened once per format")
        XCTAssertTrue(try captures.first == h.decoded(a), "the 44.1 kHz PCM got all of A")
        XCTAssertTrue(try captures.last == h.decoded(b), "the 48 kHz PCM got all of B")

        // Both plays: each from its start to its last decoded frame.
        let plays = try await h.storedPlays { $0.count == 2 && $0.allSatisfy { $0.state == "ready" } }
        XCTAssertEqual(plays.map(\.productId), ["tr-a", "tr-b"])
        XCTAssertEqual(plays.map(\.state), ["ready", "ready"])
        XCTAssertEqual(plays.map(\.startPosition), [0, 0])
        let ends = [try h.decodedSeconds(a, rate: 44_100), try h.decodedSeconds(b, rate: 48_000)]
        for (play, end) in zip(plays, ends) {
            XCTAssertEqual(play.endPosition, end, accuracy: 0.002, "\(play.productId) ends at its last frame")
        }
    }
}
