import HTTPClient
import TestSupport
import XCTest

/// The JSON endpoints of docs/origin.md ("The content-origin API") as a client sees them.
final class OriginAPITests: OriginTestCase {
    func testV1PathsRequireBasicCredentials() async throws {
        let api = try api
        let anonymous = try await api.get("/v1/stations", authorized: false)
        XCTAssertEqual(anonymous.status, 401)
        let error = try api.json(anonymous)
        XCTAssertEqual(error.int("status"), 401)
        XCTAssertNotNil(error.int("subStatus"))
        XCTAssertNotNil(error.string("userMessage"))
        XCTAssertNotNil(parseServerTime(error.string("serverTime")))

        let wrong = HTTPClient(credentials: BasicCredentials(token: "demo", secret: "wrong"))
        let refused = try await wrong.send(HTTPRequest(url: try origin.baseURL + "/v1/stations"))
        XCTAssertEqual(refused.status, 401)

        let allowed = try await api.get("/v1/stations")
        XCTAssertEqual(allowed.status, 200)
        XCTAssertNotNil(allowed.headers["date"])
        XCTAssertEqual(allowed.headers["content-type"], "application/json")
    }

    func testStationsListsStreamingAndOfflineStations() async throws {
        let api = try api
        let body = try api.json(try await api.get("/v1/stations"))
        XCTAssertNotNil(parseServerTime(body.string("serverTime")))
        let stations = body.objects("stations")
        XCTAssertEqual(stations.first { $0.string("id") == "st-1" }?["offline"] as? Bool, false)
        XCTAssertEqual(stations.first { $0.string("id") == "st-9" }?["offline"] as? Bool, true)
        let offline = body.objects("offlineStations")
        XCTAssertEqual(Set(offline.compactMap { $0.string("id") }), ["st-9", "st-10", "st-11"])
        for station in offline {
            XCTAssertEqual(station.int("itemCount"), 3)
            XCTAssertGreaterThan((station["durationSeconds"] as? NSNumber)?.doubleValue ?? 0, 5)
            XCTAssertGreaterThan(station.int("sizeBytes") ?? 0, 0)
        }
    }

    func testOfflineSyncAddsOnlyWhatTheDeviceLacks() async throws {
        let api = try api
        let whole = try api.json(try await api.post("/v1/stations/st-9/offline", ["targetMinutes": NSNull(), "have": [], "played": []]))
        let items = whole.objects("items")
        XCTAssertEqual(items.count, 3)
        XCTAssertEqual(whole.string("onExpiry"), "keep")
        XCTAssertEqual(whole.object("station").string("id"), "st-9")
        let serverTime = try XCTUnwrap(parseServerTime(whole.string("serverTime")))
        XCTAssertGreaterThan(try XCTUnwrap(parseServerTime(whole.string("expiresAt"))), serverTime)
        XCTAssertNotNil(parseServerTime(whole.string("revalidateAt")))
        XCTAssertEqual(whole.string("manifestHash")?.count, 64)
        for item in items {
            let url = try XCTUnwrap(item.string("url"))
            XCTAssertTrue(url.hasPrefix("/media/"), url)
            XCTAssertEqual(item.string("sha256")?.count, 64)
            XCTAssertNotNil(item.object("replayGain")["trackGain"] as? NSNumber)
        }
        let ids = items.compactMap { $0.string("id") }

        let partial = try api.json(try await api.post("/v1/stations/st-9/offline", ["targetMinutes": NSNull(), "have": [ids[0]]]))
        XCTAssertEqual(partial.objects("items").compactMap { $0.string("id") }, Array(ids.dropFirst()))
        XCTAssertEqual(partial.strings("remove"), [])

        // 0.01 minutes is less than any track: holding one unheard track is already enough.
        let enough = try api.json(try await api.post("/v1/stations/st-9/offline", ["targetMinutes": 0.01, "have": [ids[0]], "played": []]))
        XCTAssertEqual(enough.objects("items").count, 0)
        XCTAssertEqual(enough.strings("remove"), [])

        // Once heard, that track is swapped for a fresh one.
        let swapped = try api.json(try await api.post("/v1/stations/st-9/offline", ["targetMinutes": 0.01, "have": [ids[0]], "played": [ids[0]]]))
        XCTAssertEqual(swapped.objects("items").compactMap { $0.string("id") }, [ids[1]])
        XCTAssertEqual(swapped.strings("remove"), [ids[0]])

        let workout = try api.json(try await api.post("/v1/stations/st-10/offline", [String: Any]()))
        XCTAssertEqual(workout.string("onExpiry"), "delete")
    }

    func testOfflineSyncRefusesUnknownAndStreamingOnlyStations() async throws {
        let api = try api
        let unknown = try await api.post("/v1/stations/st-404/offline", [String: Any]())
        XCTAssertEqual(unknown.status, 404)
        let streaming = try await api.post("/v1/stations/st-1/offline", [String: Any]())
        XCTAssertEqual(streaming.status, 403)
        XCTAssertEqual(try api.json(streaming).int("subStatus"), 4007)
        let malformed = try await api.postRaw("/v1/stations/st-9/offline", Array("{\"have\":".utf8))
        XCTAssertEqual(malformed.status, 400)
        let mistyped = try await api.post("/v1/stations/st-9/offline", ["have": "tr-1"])
        XCTAssertEqual(mistyped.status, 400)
    }

    func testPlaybackInfoReportsReplacementAndGeoBlock() async throws {
        let api = try api
        let replaced = try api.json(try await api.get("/v1/playbackinfo/tr-7?mode=offline&quality=HIGH"))
        XCTAssertEqual(replaced.string("requestedProductId"), "tr-7")
        XCTAssertEqual(replaced.string("productId"), "tr-7b")
        XCTAssertEqual(replaced.string("manifestType"), "progressive")
        XCTAssertEqual(replaced.object("manifest").string("url"), "/media/tr-7b.flac")
        XCTAssertEqual(replaced["canBeDownloaded"] as? Bool, true)
        XCTAssertNotNil(parseServerTime(replaced.string("offlineValidUntil")))

        let streamOnly = try api.json(try await api.get("/v1/playbackinfo/tr-8?mode=offline"))
        XCTAssertEqual(streamOnly["canBeDownloaded"] as? Bool, false)

        let blocked = try await api.get("/v1/playbackinfo/tr-geo?mode=stream")
        XCTAssertEqual(blocked.status, 403)
        XCTAssertEqual(try api.json(blocked).int("subStatus"), 4032)

        let missing = try await api.get("/v1/playbackinfo/tr-nothing")
        XCTAssertEqual(missing.status, 404)
        XCTAssertNotNil(try api.json(missing).int("subStatus"))
    }

    func testRentalKeyIsRefusedOnceTheServerClockPassesItsExpiry() async throws {
        let api = try api
        let info = try api.json(try await api.get("/v1/playbackinfo/vid-1?mode=offline"))
        XCTAssertEqual(info.string("manifestType"), "hls")
        let token = try XCTUnwrap(info.string("licenseSecurityToken"))
        let license = try api.json(
            try await api.post(
                "/v1/licenses",
                [
                    "productId": "vid-1", "securityToken": token, "kind": "rental", "rentalSeconds": 60,
                ]))
        let licenseId = try XCTUnwrap(license.string("licenseId"))
        let encoded = try XCTUnwrap(license.object("keys").string("k-vid-1"))

        let key = try await api.get("/v1/keys/k-vid-1", headers: ["X-License": licenseId])
        XCTAssertEqual(key.status, 200)
        XCTAssertEqual(key.body, Array(try XCTUnwrap(Data(base64Encoded: encoded))))
        XCTAssertEqual(key.body.count, 16)
        let unlicensed = try await api.get("/v1/keys/k-vid-1")
        XCTAssertEqual(unlicensed.status, 403)

        let shifted = try await api.post("/_control/clock", ["offsetSeconds": 120], authorized: false)
        XCTAssertEqual(shifted.status, 200)
        let expired = try await api.get("/v1/keys/k-vid-1", headers: ["X-License": licenseId])
        XCTAssertEqual(expired.status, 403)
    }
}
