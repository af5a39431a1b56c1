import Wire
import XCTest

@testable import cassettectl

final class PlayerOutcomeTests: XCTestCase {
    func event(_ type: String, _ data: JSONValue, topic: String = "player") -> RPCEvent {
        RPCEvent(topic: topic, type: type, seq: 1, data: data)
    }

    func testAnErrorEventFailsWhateverWasAwaited() {
        let missing = event("FileMissing", ["name": "FileMissing", "message": "tr-1's file is gone", "productId": "tr-1"])
        for goal in [PlayerOutcome.Goal.loaded("tr-1"), .playing, .tuned("st-9")] {
            XCTAssertEqual(PlayerOutcome.judge(missing, goal: goal), .failed(name: "FileMissing", message: "tr-1's file is gone"))
        }
        XCTAssertEqual(
            PlayerOutcome.judge(event("PlaybackStateChanged", ["playbackState": "IDLE"]), goal: .playing),
            .failed(name: "Stopped", message: "the player went idle before it got there (stopped by another client?)"))
    }

    func testTheAwaitedEvents() {
        let transition = event("MediaProductTransition", ["activeMediaProduct": ["productId": "tr-1"], "playbackContext": ["requestedProductId": "tr-1"]])
        XCTAssertEqual(PlayerOutcome.judge(transition, goal: .loaded("tr-1")), .reached)
        XCTAssertEqual(PlayerOutcome.judge(transition, goal: .loaded("tr-2")), .waiting)
        let replaced = event("MediaProductTransition", ["activeMediaProduct": ["productId": "tr-7b"], "playbackContext": ["requestedProductId": "tr-7"]])
        XCTAssertEqual(PlayerOutcome.judge(replaced, goal: .loaded("tr-7")), .reached)
        XCTAssertEqual(PlayerOutcome.judge(event("PlaybackStateChanged", ["playbackState": "PLAYING"]), goal: .playing), .reached)
        XCTAssertEqual(PlayerOutcome.judge(event("PlaybackStateChanged", ["playbackState": "NOT_PLAYING"]), goal: .playing), .waiting)
        let station = event("MediaProductTransition", ["activeMediaProduct": ["productId": "it-1", "sourceType": "STATION", "sourceId": "st-9"]])
        XCTAssertEqual(PlayerOutcome.judge(station, goal: .tuned("st-9")), .reached)
        XCTAssertEqual(PlayerOutcome.judge(station, goal: .tuned("st-10")), .waiting)
        // Reachability events carry no error.
        XCTAssertEqual(PlayerOutcome.judge(event("OfflineOnly", ["localStations": 1, "origin": .null]), goal: .playing), .waiting)
        XCTAssertEqual(PlayerOutcome.judge(event("FileMissing", ["name": "FileMissing", "message": "m"], topic: "downloads"), goal: .playing), .waiting)
    }

    func testNowShowsTitleAndArtistWhenTheStatusHasThem() {
        let plain: JSONValue = ["playbackState": "PLAYING", "mediaProduct": ["productId": "tr-1"], "playbackContext": ["productId": "tr-1"]]
        XCTAssertEqual(Now.title(plain), "tr-1")
        XCTAssertFalse(Now.render(plain).contains("title"))
        let tagged: JSONValue = [
            "playbackState": "PLAYING",
            "playbackContext": [
                "productId": "tr-1", "title": "So What", "artist": "Miles Davis",
                "album": "Kind of Blue",
            ],
        ]
        XCTAssertEqual(Now.title(tagged), "So What — Miles Davis")
        XCTAssertTrue(Now.render(tagged).contains("Kind of Blue"))
        XCTAssertTrue(Now.line(tagged).contains("So What — Miles Davis (tr-1)"), Now.line(tagged))
        let topLevel: JSONValue = ["playbackState": "PLAYING", "title": "Blue in Green", "mediaProduct": ["productId": "tr-2"]]
        XCTAssertEqual(Now.title(topLevel), "Blue in Green")
    }

    func testPlaylogFlushFailsOnlyWhenTheAttemptFailed() throws {
        let failed: JSONValue = [
            "attempted": true, "pending": 2,
            "lastAttempt": ["result": "failed", "error": ["name": "OriginServerError", "message": "HTTP 503"]],
        ]
        let failure = try XCTUnwrap(Playlog.flushFailure(failed))
        XCTAssertEqual(failure.exit, 2)
        XCTAssertEqual(failure.name, "OriginServerError")
        XCTAssertTrue(failure.message.contains("HTTP 503") && failure.message.contains("2 record(s) still pending"), failure.message)
        XCTAssertNil(Playlog.flushFailure(["attempted": true, "lastAttempt": ["result": "delivered"]]))
        XCTAssertNil(Playlog.flushFailure(["attempted": false, "lastAttempt": ["result": "failed"]]), "nothing was pending: an old failure")
        let going: JSONValue = ["attempted": true, "inProgress": true, "pending": 2, "lastAttempt": ["result": "failed"]]
        XCTAssertNil(Playlog.flushFailure(going), "the attempt still runs: the failure shown is an earlier one")
        XCTAssertTrue(Playlog.render(going).contains("delivery goes on in the background"), Playlog.render(going))
    }
}
