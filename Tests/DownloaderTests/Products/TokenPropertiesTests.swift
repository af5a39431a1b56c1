import Foundation
import TestSupport
import Wire
import XCTest

/// What an offline token carries besides its product, through the downloader's socket: a display
/// name (Brightcove `kBCOVOfflineVideoManagerDisplayNameKey`), the token's properties (the online
/// source URL, where its file is, its times) and the app's `referenceId`, which every offline
/// event of the token loops back (TIDAL), across a restart too.
final class TokenPropertiesTests: XCTestCase {
    func testDisplayNameAndTokenPropertiesAreKeptAndShown() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        let (token, cached) = try await h.startAndOffline("tr-1", ["displayName": "Morning run – mix"])
        XCTAssertEqual(cached["displayName"], "Morning run – mix")
        let info = try h.api.json(try await h.api.get("/v1/playbackinfo/tr-1?mode=offline&quality=LOSSLESS"))
        let manifestPath = try XCTUnwrap((info["manifest"] as? [String: Any])?["url"] as? String)
        XCTAssertEqual(cached["onlineSourceURL"]?.stringValue, h.origin.baseURL + manifestPath)
        let filePath = try XCTUnwrap(cached["filePath"]?.stringValue)
        XCTAssertTrue(filePath.hasPrefix("media/"), filePath)
        XCTAssertEqual(try sha256(ofFile: h.dir.stateDir + "/" + filePath), info["manifest"].flatMap { ($0 as? [String: Any])?["sha256"] as? String })
        for key in ["requestedAt", "startedAt", "endedAt"] { XCTAssertNotNil(cached[key]?.stringValue, key) }

        // Without a name, the product's title (an HLS video's too), else its id.
        let video = try await h.call("offline.add", ["productId": "vid-1"])
        XCTAssertEqual(video["displayName"], "Demo Film")
        let listed = try await h.call("offline.list")["items"]?.arrayValue ?? []
        XCTAssertEqual(Set(listed.compactMap { $0["displayName"]?.stringValue }), ["Morning run – mix", "Demo Film"])

        // Asked again with another name: the same token, renamed; kept across a restart.
        let renamed = try await h.call("offline.add", ["productId": "tr-1", "displayName": "Evening"])
        XCTAssertEqual(renamed["token"]?.stringValue, token)
        XCTAssertEqual(renamed["displayName"], "Evening")
        // A preloaded license's token keeps them for the download that follows (Brightcove).
        let preloaded = try await h.call("offline.preloadLicense", ["productId": "tr-3", "displayName": "Later", "referenceId": "app-pre"])
        XCTAssertEqual(preloaded["displayName"], "Later")
        XCTAssertEqual(preloaded["referenceId"], "app-pre")
        let downloading = try await h.call("offline.add", ["productId": "tr-3"])
        XCTAssertEqual(downloading["token"], preloaded["token"])
        XCTAssertEqual(downloading["displayName"], "Later")
        XCTAssertEqual(downloading["referenceId"], "app-pre")
        try h.stop()
        try h.start()
        let after = try await h.call("offline.status", ["token": .string(token)])
        XCTAssertEqual(after["displayName"], "Evening")
        XCTAssertEqual(after["onlineSourceURL"], cached["onlineSourceURL"])
        for bad: JSONValue in ["", .string(String(repeating: "x", count: 257)), "a\u{7}b", .number(5)] {
            do {
                _ = try await h.call("offline.add", ["productId": "tr-1", "displayName": bad])
                XCTFail("displayName \(bad) accepted")
            } catch let error as RPCError {
                XCTAssertEqual(error.code, -32602, "\(error)")
            }
        }
    }

    func testEveryOfflineEventLoopsBackTheReferenceIdAcrossARestart() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        var client = try await h.client()
        _ = try await client.call("events.subscribe", ["topics": ["downloads"]])
        var events = EventCollector(client)
        let added = try await h.call("offline.add", ["productId": "tr-1", "referenceId": "app-ref-1"])
        let token = try XCTUnwrap(added["token"]?.stringValue)
        XCTAssertEqual(added["referenceId"], "app-ref-1")
        _ = try await h.waitProduct(token, state: "cached")
        try await events.wait("OfflineDone", timeout: 10) { $0.type == "OfflineDone" && $0.data["token"]?.stringValue == token }
        var mine = events.all.filter { $0.data["token"]?.stringValue == token }
        XCTAssertTrue(Set(["OfflineStarted", "ItemStateChanged", "OfflineDone"]).isSubset(of: Set(mine.map(\.type))), "\(mine.map(\.type))")
        XCTAssertTrue(mine.allSatisfy { $0.data["referenceId"] == "app-ref-1" }, "\(mine.map(\.data))")

        // A failure carries it too.
        let info = try h.api.json(try await h.api.get("/v1/playbackinfo/tr-2?mode=offline&quality=LOSSLESS"))
        let path = try XCTUnwrap((info["manifest"] as? [String: Any])?["url"] as? String)
        try await h.api.injectFaults(path, [["status": 404, "repeat": 20]])
        let failing = try await h.call("offline.add", ["productId": "tr-2", "referenceId": "app-ref-2"])
        let failingToken = try XCTUnwrap(failing["token"]?.stringValue)
        let failed = try await events.wait("OfflineFailed", timeout: 60) { $0.type == "OfflineFailed" && $0.data["token"]?.stringValue == failingToken }
        XCTAssertEqual(failed.data["referenceId"], "app-ref-2")
        await client.close()

        // After a restart, the events of the token still carry it.
        try h.stop()
        try h.start()
        client = try await h.client()
        _ = try await client.call("events.subscribe", ["topics": ["downloads"]])
        events = EventCollector(client)
        let status = try await h.call("offline.status", ["token": .string(token)])
        XCTAssertEqual(status["referenceId"], "app-ref-1")
        _ = try await h.call("offline.delete", ["token": .string(token)])
        // ItemStateChanged `deleted` comes right after OfflineDeleted.
        try await events.wait("ItemStateChanged deleted", timeout: 10) {
            $0.type == "ItemStateChanged" && $0.data["token"]?.stringValue == token && $0.data["state"] == "deleted"
        }
        mine = events.all.filter { $0.data["token"]?.stringValue == token }
        XCTAssertEqual(Set(mine.map(\.type)), ["OfflineDeleted", "ItemStateChanged"])
        XCTAssertTrue(mine.allSatisfy { $0.data["referenceId"] == "app-ref-1" }, "\(mine.map(\.data))")
        await client.close()
    }
}
