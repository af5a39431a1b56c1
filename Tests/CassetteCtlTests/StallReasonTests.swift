import Wire
import XCTest

@testable import cassettectl

final class StallReasonTests: XCTestCase {
    func testItemReasonsFromTheDownloadersCodes() throws {
        let cellular = try XCTUnwrap(StallReason.item(error: "CellularNotAllowed", reason: "cellular (wwan0)"))
        XCTAssertEqual(cellular.short, "cellular not allowed")
        XCTAssertTrue(
            cellular.message.contains("cellular (wwan0)") && cellular.message.contains("cassettectl policy set --allow-cellular yes"),
            cellular.message)
        XCTAssertEqual(StallReason.item(error: "NoNetwork", reason: nil)?.short, "no network")
        let full = try XCTUnwrap(StallReason.item(error: "CacheLimit", reason: "needs 1.2 MiB (1258291 bytes) more"))
        XCTAssertEqual(full.short, "cache full")
        XCTAssertTrue(full.message.contains("1258291") && full.message.contains("--max-cache-bytes"), full.message)
        let metered = try XCTUnwrap(StallReason.item(error: "MeteredNotAllowed", reason: "the wifi link is metered"))
        XCTAssertTrue(metered.message.contains("--allow-metered yes"), metered.message)
        XCTAssertEqual(StallReason.item(error: "NetworkError", reason: "HTTP 503")?.short, "origin not answering")
        let refused = try XCTUnwrap(StallReason.item(error: "Unauthorized", reason: "the origin answered HTTP 401"))
        XCTAssertTrue(refused.message.contains("client token and secret"), refused.message)
        // Errors that are not a wait are not a stall.
        XCTAssertNil(StallReason.item(error: "DownloadFailed", reason: "x"))
        XCTAssertNil(StallReason.item(error: nil, reason: nil))
        XCTAssertEqual(StallReason.originFailing("nothing arrived for 20 s").short, "origin failing")
        XCTAssertFalse(StallReason.paused.message.contains("offline.resume"))
    }

    func testNetworkVerdicts() {
        let none: JSONValue = ["type": "none", "downloads": "none", "block": "NoNetwork", "reason": "no default route"]
        XCTAssertEqual(StallReason.network(none), StallReason(code: "NoNetwork", detail: "no default route"))
        let cellular: JSONValue = ["type": "cellular", "downloads": "allowCellularItemsOnly", "block": "CellularNotAllowed", "reason": "cellular"]
        XCTAssertEqual(StallReason.network(cellular)?.code, "CellularNotAllowed")
        XCTAssertNil(StallReason.network(cellular, itemAllowsCellular: true))
        XCTAssertNil(StallReason.network(["type": "wifi", "downloads": "all"]))
        XCTAssertNil(StallReason.network([:]))
    }

    func testHintsNameCommandsNotMethods() {
        for name in [
            "StationNotPlayable", "NothingToPlay", "IllegalPlaybackRequest", "OfflineNotValid", "UnknownToken", "NoLicense",
            "CellularNotAllowed", "CacheLimit", "StorageFull", "QueueFull", "OriginUnreachable", "InvalidState",
        ] {
            let hint = Hints.forError(name, service: .player)
            XCTAssertNotNil(hint, name)
            XCTAssertTrue(hint?.contains("cassettectl ") ?? false, "\(name): \(hint ?? "")")
            for method in ["stations.sync", "station.tune", "offline.add", "player.load", "policy.set", "playlog.flush", "sync.now"] {
                XCTAssertFalse(hint?.contains(method) ?? false, "\(name) names \(method)")
            }
        }
        XCTAssertTrue(Hints.forError("StationNotPlayable", service: .player)?.contains("cassettectl sync") ?? false)
        XCTAssertNil(Hints.forError("InvalidParams", service: .player))
    }
}

final class HintsTests: XCTestCase {
    /// In offline mode a station not on the device cannot be synced either: the hint says go online.
    func testOfflineModeStationHintSaysGoOnline() {
        let hint = Hints.forError("StationNotPlayable", service: .player, params: ["stationId": "st-1"], reason: "OfflineMode")
        XCTAssertEqual(
            hint,
            "the player is in offline mode and st-1 is not on the device: `cassettectl config set --offline-mode no` streams it (and lets `cassettectl sync st-1` take it offline)."
        )
        let failure = CtlFailure.answered(
            RPCError(code: 2005, name: "StationNotPlayable", message: "…", details: ["reason": "OfflineMode"]),
            service: .player, method: "station.tune", params: ["stationId": "st-1"])
        XCTAssertEqual(failure.reason, "OfflineMode")
        XCTAssertEqual(failure.hint, hint)
    }

    /// `tune` names the station that plays when the player fell back to one on the device,
    /// with or without `--no-wait`.
    func testTuneLineNamesTheFallbackStation() {
        XCTAssertEqual(Tune.line(asked: "st-1", answer: ["ok": true, "stationId": "st-1", "fallback": false]), "tuned to st-1")
        XCTAssertEqual(
            Tune.line(asked: "st-1", answer: ["ok": true, "stationId": "st-10", "fallback": true]),
            "st-1 cannot be reached; playing st-10 from the device")
    }

    /// The stations table says why the origin's list is missing, not always "not reachable".
    func testStationsOriginLineNamesTheCause() {
        XCTAssertEqual(Stations.originLine(["available": true]), "origin: reachable")
        XCTAssertTrue(Stations.originLine(["available": false, "error": "OriginUnreachable"]).hasPrefix("origin: not reachable"))
        XCTAssertTrue(Stations.originLine(["available": false, "error": "OfflineMode"]).contains("offline mode"))
        XCTAssertTrue(Stations.originLine(["available": false, "error": "Unauthorized"]).contains("credentials"))
        XCTAssertFalse(Stations.originLine(["available": false, "error": "Unauthorized"]).contains("not reachable"))
    }

    func testHintsNameTheStationOrProductOfTheCall() {
        XCTAssertEqual(
            Hints.forError("StationNotPlayable", service: .player, params: ["stationId": "st-9"]),
            "run `cassettectl sync st-9` to take it offline first (`cassettectl stations` lists them).")
        XCTAssertTrue(
            Hints.forError("CacheLimit", service: .downloader, params: ["productId": "tr-1"])?
                .contains("cassettectl offline delete tr-1") ?? false)
        XCTAssertTrue(
            Hints.forError("IllegalPlaybackRequest", service: .player, params: ["mediaProduct": ["productId": "tr-2"]])?
                .contains("cassettectl offline add tr-2 --wait") ?? false)
        XCTAssertTrue(Hints.forError("StationNotPlayable", service: .player, params: [:])?.contains("<station>") ?? false)
    }

    func testAServiceErrorCarriesItsHint() {
        let failure = CtlFailure.answered(
            RPCError(code: 2005, name: "StationNotPlayable", message: "not synced"), service: .player,
            method: "station.tune", params: ["stationId": "st-9"])
        XCTAssertEqual(failure.text, "player: StationNotPlayable: not synced")
        XCTAssertEqual(failure.exit, 1)
        XCTAssertEqual(failure.json["error"]?["code"]?.intValue, 2005)
        XCTAssertEqual(failure.json["error"]?["method"], "station.tune")
        XCTAssertTrue(failure.json["error"]?["hint"]?.stringValue?.contains("cassettectl sync st-9") ?? false)
    }
}
