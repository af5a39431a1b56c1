import Foundation
import TestSupport
import Wire
import XCTest

/// A product that fails before any sound is answered with its error where the caller is (and
/// raised as the error event as before); `player.config.set` refuses bad values as InvalidConfig
/// naming the field and unknown keys as invalid params naming them.
final class ErrorAnswerTests: XCTestCase {
    func testLoadOfAProductThatCannotStartAnswersItsError() async throws {
        let origin = try OriginProcess.start()
        defer { origin.discard() }
        let h = try PlayerHarness()
        let client = try await h.start(
            extraArgs: ["--origin", origin.baseURL],
            environment: ["CASSETTE_CLIENT_TOKEN": "demo", "CASSETTE_CLIENT_SECRET": "demo"])
        let log = EventLog(client)
        for (product, name, code) in [
            ("tr-geo", "ContentNotAvailableInLocation", 4032),
            ("tr-sub", "ContentNotAvailableForSubscription", 4033),
            ("tr-nothing-here", "NotFound", 4404),
        ] {
            do {
                _ = try await h.call("player.load", PlayerHarness.product(product))
                XCTFail("\(product) cannot be played: the load says so")
            } catch let error as RPCError {
                XCTAssertEqual(error.name, name, product)
                XCTAssertEqual(error.code, code, product)
            }
            let events = try await log.untilState("IDLE")
            XCTAssertTrue(events.contains { $0.type == name }, "the error event as well: \(events.map(EventLog.describe))")
        }
        // Offline mode: a product not on the device is refused without asking the origin.
        _ = try await h.call("player.config.set", ["offlineMode": true])
        do {
            _ = try await h.call("player.load", PlayerHarness.product("tr-1"))
            XCTFail("in offline mode a product not on the device is refused")
        } catch let error as RPCError {
            XCTAssertEqual(error.name, "IllegalPlaybackRequest")
        }
        // A station not on the device: refused, with offline mode named as the reason.
        do {
            _ = try await h.call("station.tune", ["stationId": "st-1"])
            XCTFail("in offline mode a station not on the device is refused")
        } catch let error as RPCError {
            XCTAssertEqual(error.name, "StationNotPlayable")
            XCTAssertEqual(error.details["reason"]?.stringValue, "OfflineMode")
        }
        // Nor does media.locate ask the origin for it.
        let api = OriginAPI(origin: origin)
        let asked = { try await api.stats().object("requests")["/v1/playbackinfo/tr-2"] as? Int ?? 0 }
        let before = try await asked()
        do {
            _ = try await h.call("media.locate", ["productId": "tr-2"])
            XCTFail("in offline mode media.locate of a product not on the device is refused")
        } catch let error as RPCError {
            XCTAssertEqual(error.name, "OfflineMode")
            XCTAssertEqual(error.code, 1012)
        }
        let after = try await asked()
        XCTAssertEqual(after, before, "offline mode sends nothing to the origin")
        // A product that plays answers ok.
        _ = try await h.call("player.config.set", ["offlineMode": false])
        _ = try await h.call("player.load", PlayerHarness.product("tr-1"))
        _ = try await h.call("player.play")
        _ = try await h.call("player.reset")
        await h.stop()
    }

    func testConfigSetRefusesBadValuesByNameAndUnknownKeys() async throws {
        let h = try PlayerHarness()
        try await h.start()
        for (key, value) in [
            ("loudnessNormalizationMode", JSONValue.string("LOUD")), ("offlineMode", "yes"),
            ("loudnessNormalizationPreAmp", "4"), ("streamingQualityCellular", 3),
        ] {
            do {
                _ = try await h.call("player.config.set", .object([key: value]))
                XCTFail("\(key) = \(value) is refused")
            } catch let error as RPCError {
                XCTAssertEqual(error.name, "InvalidConfig", key)
                XCTAssertEqual(error.code, 2007, key)
                XCTAssertTrue(error.message.contains(key), error.message)
            }
        }
        do {
            _ = try await h.call("player.config.set", ["offlineMod": true])
            XCTFail("an unknown key is refused")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, -32602)
            XCTAssertTrue(error.message.contains("offlineMod"), error.message)
        }
        let config = try await h.call("player.config.get")
        XCTAssertEqual(config["loudnessNormalizationMode"]?.stringValue, "OFF", "nothing of a refused call was kept")
        XCTAssertEqual(config["offlineMode"]?.boolValue, false)
        await h.stop()
    }
}
