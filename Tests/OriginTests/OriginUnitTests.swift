import TestSupport
import Wire
import XCTest

@testable import cassette_origin

/// The origin's pure decisions, tested in memory.
final class OfflineSelectionTests: XCTestCase {
    private let station: [(id: String, seconds: Double)] = [("a", 60), ("b", 60), ("c", 60), ("d", 60)]

    func testWholeStationAddsEverythingMissingAndKeepsHeardItems() {
        let selection = OfflineSelection(station: station, have: ["b", "gone"], played: ["b"], targetMinutes: nil)
        XCTAssertEqual(selection.add, ["a", "c", "d"])
        XCTAssertEqual(selection.remove, ["gone"])
        XCTAssertEqual(selection.holding, ["a", "b", "c", "d"])
    }

    func testEnoughUnheardMinutesAddNothing() {
        let selection = OfflineSelection(station: station, have: ["a", "b"], played: [], targetMinutes: 2)
        XCTAssertEqual(selection.add, [])
        XCTAssertEqual(selection.remove, [])
    }

    func testHeardItemsAreSwappedForFreshOnes() {
        let selection = OfflineSelection(station: station, have: ["a", "b"], played: ["a"], targetMinutes: 2)
        XCTAssertEqual(selection.add, ["c"])
        XCTAssertEqual(selection.remove, ["a"])
        XCTAssertEqual(selection.holding, ["b", "c"])
    }

    func testHeardItemsStayWhenNothingFreshIsLeft() {
        let selection = OfflineSelection(
            station: station, have: ["a", "b", "c", "d"], played: ["a", "b", "c", "d"],
            targetMinutes: 2)
        XCTAssertEqual(selection.add, [])
        XCTAssertEqual(selection.remove, ["c", "d"])
        XCTAssertEqual(selection.holding, ["a", "b"])
    }
}

final class FaultInjectorTests: XCTestCase {
    func testRepeatedFaultIsPoppedThatManyTimesInOrder() throws {
        let injector = FaultInjector()
        injector.enqueue(
            prefix: "/v1/plays",
            faults: [
                try Fault(json: ["status": 503, "repeat": 2]), try Fault(json: ["reset": true]),
            ])
        XCTAssertEqual(injector.pop(for: "/v1/plays")?.status, 503)
        XCTAssertEqual(injector.pop(for: "/v1/plays")?.status, 503)
        XCTAssertEqual(injector.pop(for: "/v1/plays")?.reset, true)
        XCTAssertNil(injector.pop(for: "/v1/plays"))
    }

    func testLongestMatchingPrefixWins() throws {
        let injector = FaultInjector()
        injector.enqueue(prefix: "/media/", faults: [try Fault(json: ["delayMs": 1])])
        injector.enqueue(prefix: "/media/tr-1.flac", faults: [try Fault(json: ["ignoreRange": true])])
        XCTAssertNil(injector.pop(for: "/v1/stations"))
        XCTAssertEqual(injector.pop(for: "/media/tr-1.flac")?.ignoreRange, true)
        XCTAssertEqual(injector.pop(for: "/media/tr-1.flac")?.delayMs, 1)
    }

    func testUnknownFaultFieldsAreRefused() {
        XCTAssertThrowsError(try Fault(json: ["stauts": 503]))
        XCTAssertThrowsError(try Fault(json: ["status": "503"]))
        XCTAssertThrowsError(try Fault(json: ["stallAfter": -1]))
    }

    func testStallAfterIsReadAndListed() throws {
        let fault = try Fault(json: ["stallAfter": 0, "repeat": 3])
        XCTAssertEqual(fault.stallAfter, 0)
        XCTAssertEqual(fault.json["stallAfter"]?.intValue, 0)
        XCTAssertEqual(fault.json["repeat"]?.intValue, 3)
    }
}

final class JSONValueTests: XCTestCase {
    func testBooleansAndNumbersStayApart() throws {
        let parsed = try JSONValue.parse(Array(#"{"a":true,"b":1,"c":1.5,"d":null,"e":"x\"y"}"#.utf8))
        XCTAssertEqual(parsed["a"], .bool(true))
        XCTAssertEqual(parsed["b"], .number(1))
        XCTAssertEqual(parsed["d"], .null)
        XCTAssertEqual(String(decoding: parsed.serialized(), as: UTF8.self), #"{"a":true,"b":1,"c":1.5,"d":null,"e":"x\"y"}"#)
    }

    func testMalformedInputThrows() {
        XCTAssertThrowsError(try JSONValue.parse(Array("{\"a\":".utf8)))
        XCTAssertThrowsError(try JSONValue.parse([]))
    }
}
