import Foundation
import Wire
import XCTest

@testable import player

/// One product's `PlayRecording` in memory: what it writes, in which order, from its events.
final class PlayRecordingTests: XCTestCase {
    private let subject = PlayRecording.Subject(
        product: MediaProduct(productId: "tr-1", productType: "TRACK"),
        context: PlaybackContext(
            track: TrackInfo(
                requestedProductId: "tr-1", actualProductId: "tr-1", audioQuality: "HIGH",
                durationSeconds: 30, offline: true),
            playbackSessionId: "session-1", referenceId: nil, startAssetPosition: 0),
        stationId: nil)
    private let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    private func kinds(_ records: [Recorded]) -> [String] {
        records.map { record in record.metric.map(\.name.rawValue) ?? (record.write.closing ? "play(closed)" : "play") }
    }

    func testAPlayedProductWritesItsSessionAndPlayInOrder() {
        var recording = PlayRecording()
        XCTAssertEqual(
            kinds(recording.startSession(subject, waited: .milliseconds(250), explicit: true, offlineMode: false, now: t0)),
            ["streaming_session_start"])
        XCTAssertEqual(kinds(recording.begin(subject, at: 0, now: t0.addingTimeInterval(0.3))), ["play"])
        XCTAssertEqual(kinds(recording.begin(subject, at: 1, now: t0.addingTimeInterval(0.4))), [], "one play per product")
        recording.action("pause", position: 2.0004, now: t0.addingTimeInterval(2.3))
        XCTAssertEqual(kinds(recording.save(at: 2.5, now: t0.addingTimeInterval(3))), ["play"])
        recording.stall(true, at: 2.5, now: t0.addingTimeInterval(4))
        recording.stall(false, at: 2.5, now: t0.addingTimeInterval(5))
        let end = recording.end(subject, at: 10.0004, reason: .complete, now: t0.addingTimeInterval(11))
        XCTAssertEqual(kinds(end), ["play(closed)", "playback_statistics", "progress", "streaming_session_end"])
        XCTAssertNil(recording.play)
        XCTAssertNil(recording.session)

        let play = end[0].write.record.json
        XCTAssertEqual(play["endPosition"]?.doubleValue, 10)
        XCTAssertEqual(play["actions"]?.arrayValue?.first?["type"], "pause")
        XCTAssertEqual(play["actions"]?.arrayValue?.first?["position"]?.doubleValue, 2)
        let statistics = end[1].metric?.payload
        XCTAssertEqual(statistics?["endReason"], "COMPLETE")
        XCTAssertEqual(statistics?["stalls"]?.arrayValue?.count, 1)
        XCTAssertEqual(statistics?["idealStartTimestamp"]?.doubleValue, (t0.timeIntervalSince1970 - 0.25) * 1000)
        XCTAssertEqual(end[2].metric?.payload["playback"]?["playedMS"]?.doubleValue, 10_000)
    }

    func testAProductNeverHeardHasNoPlayAndNoProgress() {
        var recording = PlayRecording()
        _ = recording.startSession(subject, waited: .zero, explicit: false, offlineMode: true, now: t0)
        recording.stall(true, at: nil, now: t0.addingTimeInterval(1))
        let end = recording.end(subject, at: nil, reason: .error(name: "FileMissing", message: "gone"), now: t0.addingTimeInterval(3))
        XCTAssertEqual(kinds(end), ["playback_statistics", "streaming_session_end"])
        XCTAssertEqual(end[0].metric?.payload["errorCode"], "FileMissing")
        XCTAssertEqual(end[0].metric?.payload["stalls"]?.arrayValue?.count, 1, "an open stall closes with the session")
    }
}
