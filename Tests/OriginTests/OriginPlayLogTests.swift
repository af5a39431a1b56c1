import HTTPClient
import TestSupport
import XCTest

/// Play-log ingestion: idempotence, durability across restarts, limits and faults.
final class OriginPlayLogTests: OriginTestCase {
    private func event(_ id: String) -> [String: Any] {
        [
            "eventId": id, "productId": "tr-1", "requestedProductId": "tr-1", "playbackSessionId": "s-1",
            "startedAt": "2026-01-01T00:00:00Z", "endedAt": "2026-01-01T00:03:00Z",
            "startPosition": 0, "endPosition": 180, "offline": true, "actions": [],
        ]
    }

    func testSameEventSentTwiceIsAcceptedTwiceAndCountedOnce() async throws {
        let api = try api
        for _ in 0..<2 {
            let answer = try api.json(try await api.post("/v1/plays", ["events": [event("e-1")]]))
            XCTAssertEqual(answer.strings("accepted"), ["e-1"])
            XCTAssertNotNil(parseServerTime(answer.string("serverTime")))
        }
        let plays = try await api.stats().object("plays")
        XCTAssertEqual(plays.int("unique"), 1)
        XCTAssertEqual(plays.int("received"), 2)
        XCTAssertEqual(plays.int("duplicates"), 1)
        XCTAssertEqual(plays.int("requests"), 2)
    }

    func testEventsWithoutIdsAreRejectedWithAReason() async throws {
        let api = try api
        var noProduct = event("e-2")
        noProduct.removeValue(forKey: "productId")
        var noId = event("x")
        noId.removeValue(forKey: "eventId")
        let answer = try api.json(try await api.post("/v1/plays", ["events": [event("e-1"), noProduct, noId]]))
        XCTAssertEqual(answer.strings("accepted"), ["e-1"])
        let rejected = answer.objects("rejected")
        XCTAssertEqual(rejected.count, 2)
        XCTAssertEqual(rejected.first?.string("eventId"), "e-2")
        XCTAssertTrue(rejected.allSatisfy { !($0.string("reason") ?? "").isEmpty })
    }

    func testBatchesOver500AndMalformedBodiesAre400() async throws {
        let api = try api
        let tooMany = try await api.post("/v1/plays", ["events": (0...500).map { event("e-\($0)") }])
        XCTAssertEqual(tooMany.status, 400)
        let malformed = try await api.postRaw("/v1/plays", Array("{\"events\":[".utf8))
        XCTAssertEqual(malformed.status, 400)
        XCTAssertEqual(try api.json(malformed).int("status"), 400)
        let huge = try await api.postRaw("/v1/consumption", [UInt8](repeating: 0x20, count: 16 * 1024 * 1024 + 1))
        XCTAssertEqual(huge.status, 413)
        let uniqueAfterBadInput = try await api.stats().object("plays").int("unique")
        XCTAssertEqual(uniqueAfterBadInput, 0)
    }

    func testPlaysSurviveAnOriginRestart() async throws {
        let first = try api
        let playStatus = try await first.post("/v1/plays", ["events": [event("e-restart")]]).status
        XCTAssertEqual(playStatus, 200)
        let recordStatus = try await first.post("/v1/consumption", ["records": [["recordId": "r-1", "productId": "tr-1"]]]).status
        XCTAssertEqual(recordStatus, 200)

        XCTAssertEqual(try restartOrigin(), 0, "SIGTERM should exit 0")
        let api = try api
        let answer = try api.json(try await api.post("/v1/plays", ["events": [event("e-restart")]]))
        XCTAssertEqual(answer.strings("accepted"), ["e-restart"])
        _ = try await api.post("/v1/consumption", ["records": [["recordId": "r-1", "productId": "tr-1"]]])
        let stats = try await api.stats()
        XCTAssertEqual(stats.object("plays").int("unique"), 1)
        XCTAssertEqual(stats.object("plays").int("duplicates"), 1)
        XCTAssertEqual(stats.object("consumption").int("unique"), 1)
        XCTAssertEqual(stats.object("consumption").int("duplicates"), 1)
    }

    func testServiceUnavailableFaultCarriesRetryAfterThenRequestsSucceed() async throws {
        let api = try api
        try await api.injectFaults("/v1/plays", [["status": 503, "retryAfter": 2]])
        let refused = try await api.post("/v1/plays", ["events": [event("e-1")]])
        XCTAssertEqual(refused.status, 503)
        XCTAssertEqual(refused.headers["retry-after"], "2")
        XCTAssertEqual(try api.json(refused).int("status"), 503)
        let uniqueAfterFault = try await api.stats().object("plays").int("unique")
        XCTAssertEqual(uniqueAfterFault, 0, "a 503 fault must not process the request")

        let accepted = try await api.post("/v1/plays", ["events": [event("e-1")]])
        XCTAssertEqual(accepted.status, 200)
        let stats = try await api.stats()
        XCTAssertEqual(stats.object("plays").int("unique"), 1)
        XCTAssertEqual(stats.object("requests").int("/v1/plays"), 2)
    }

    func testCommitThenResetRecordsThePlayButSendsNoAnswer() async throws {
        let api = try api
        try await api.injectFaults("/v1/plays", [["commitThenReset": true]])
        do {
            let response = try await api.post("/v1/plays", ["events": [event("e-commit")]])
            XCTFail("expected the connection to be reset, got \(response.status)")
        } catch is HTTPClientError {
            // The client never learns that the batch was stored.
        }
        let uniqueAfterCommit = try await api.stats().object("plays").int("unique")
        XCTAssertEqual(uniqueAfterCommit, 1)
        let resent = try api.json(try await api.post("/v1/plays", ["events": [event("e-commit")]]))
        XCTAssertEqual(resent.strings("accepted"), ["e-commit"])
        let duplicatesAfterResend = try await api.stats().object("plays").int("duplicates")
        XCTAssertEqual(duplicatesAfterResend, 1)
    }

    func testResetFaultDropsTheRequestUnprocessed() async throws {
        let api = try api
        try await api.injectFaults("/v1/plays", [["reset": true, "repeat": 2]])
        for _ in 0..<2 {
            do {
                _ = try await api.post("/v1/plays", ["events": [event("e-reset")]])
                XCTFail("expected a reset")
            } catch is HTTPClientError {}
        }
        let uniqueAfterResets = try await api.stats().object("plays").int("unique")
        XCTAssertEqual(uniqueAfterResets, 0)
        let statusAfterResets = try await api.post("/v1/plays", ["events": [event("e-reset")]]).status
        XCTAssertEqual(statusAfterResets, 200)
    }
}
