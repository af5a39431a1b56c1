import Foundation
import Wire
import XCTest

@testable import cassettectl

/// `cassettectl health`'s lines from a service's `health` member.
final class HealthLinesTests: XCTestCase {
    func testProblemsBecomeOneLineEachNamingTheService() {
        let health: JSONValue = ["ok": false, "problems": ["audio output hw:5 cannot be opened", "catalog not open yet"], "ageSeconds": 2]
        XCTAssertEqual(
            Health.problems(of: .player, health: health, maxAge: 30),
            ["player: audio output hw:5 cannot be opened", "player: catalog not open yet"])
    }

    func testAHealthyVerdictHasNoLineAndAStaleOneHasOne() {
        XCTAssertEqual(Health.problems(of: .reporter, health: ["ok": true, "problems": [], "ageSeconds": 4], maxAge: 30), [])
        XCTAssertEqual(
            Health.problems(of: .reporter, health: ["ok": true, "problems": [], "ageSeconds": 45.5], maxAge: 30),
            ["reporter: the last health check is 45 s old; the service may be stalled"])
    }

    func testAServiceWithoutAVerdictIsAProblem() {
        XCTAssertEqual(
            Health.problems(of: .downloader, health: ["healthy": true], maxAge: 30),
            ["downloader: gives no health verdict (a service older than cassettectl?)"])
    }
}

/// `cassettectl status`'s time to silence.
final class SilenceTextTests: XCTestCase {
    func testForecastAtAGlance() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        XCTAssertEqual(Status.silence(["playableSeconds": 0, "silentAt": .null], now: now), "nothing to play offline")
        XCTAssertEqual(Status.silence(["playableSeconds": 5400, "silentAt": .null], now: now), "1 h 30 min playable offline, never silent")
        let in3Days = UTCTimestamp.rfc3339(now.addingTimeInterval(3 * 86400 + 7200))
        XCTAssertEqual(
            Status.silence(["playableSeconds": 600, "silentAt": .string(in3Days)], now: now),
            "10 min playable offline, silent in 3 d 2 h")
    }
}
