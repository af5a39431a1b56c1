import Foundation
import GRDB
import TestSupport
import Wire
import XCTest

/// Brightcove licenses through the socket: purchase and rental (the rental's clock
/// starts when requested and runs on the server's time), preload before the content, renewal
/// without downloading again, keys in the catalog and gone with the content.
final class LicenseTests: XCTestCase {
    let hour = 3_600.0

    func testRentalPurchaseRenewAndBadTerms() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        // A one-hour rental, licensed before its download.
        let (token, cached) = try await h.startAndOffline("tr-1", ["rentalSeconds": 3600])
        let license = try XCTUnwrap(cached["license"]?.objectValue, "\(cached)")
        XCTAssertEqual(license["kind"]?.stringValue, "rental")
        let requestedAt = try XCTUnwrap(parseServerTime(license["requestedAt"]?.stringValue))
        let expiresAt = try XCTUnwrap(parseServerTime(license["expiresAt"]?.stringValue))
        XCTAssertEqual(expiresAt.timeIntervalSince(requestedAt), hour, accuracy: 5)
        let valid = try await h.call("offline.state", ["productId": "tr-1"])
        XCTAssertEqual(valid["state"]?.stringValue, "OFFLINED_AND_VALID")

        // Two hours of server time later the rental is over, though the content is still valid.
        try await h.setServerClock(offset: 2 * hour)
        _ = try await h.call("stations.list") // the server's time reaches the downloader
        let expired = try await h.call("offline.state", ["productId": "tr-1"])
        XCTAssertEqual(expired["state"]?.stringValue, "OFFLINED_BUT_NOT_VALID")

        // Renewed with the same terms: a new license, no byte downloaded again.
        let mediaBefore = try await h.mediaStats()
        let renewed = try await h.call("offline.renewLicense", ["token": .string(token)])
        let renewedLicense = try XCTUnwrap(renewed["license"]?.objectValue)
        XCTAssertEqual(renewedLicense["kind"]?.stringValue, "rental")
        XCTAssertNotEqual(renewedLicense["licenseId"], license["licenseId"])
        let renewedAt = try XCTUnwrap(parseServerTime(renewedLicense["requestedAt"]?.stringValue))
        XCTAssertGreaterThan(renewedAt.timeIntervalSince(requestedAt), hour, "requested on the server's new time")
        let mediaAfter = try await h.mediaStats()
        XCTAssertEqual(mediaAfter.full, mediaBefore.full)
        XCTAssertEqual(mediaAfter.ranged, mediaBefore.ranged)
        let again = try await h.call("offline.state", ["productId": "tr-1"])
        XCTAssertEqual(again["state"]?.stringValue, "OFFLINED_AND_VALID")
        let licenseRows = try await h.catalogPool().read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM licenses WHERE token = ?", arguments: [token])
        }
        XCTAssertEqual(licenseRows, 1, "a renewal replaces the license")

        // A purchase never expires; content offlined without terms has no license at all.
        let bought = try await h.call("offline.add", ["productId": "tr-2", "purchase": true])
        let boughtDone = try await h.waitProduct(try XCTUnwrap(bought["token"]?.stringValue), state: "cached")
        XCTAssertEqual(boughtDone["license"]?["kind"]?.stringValue, "purchase")
        XCTAssertEqual(boughtDone["license"]?["expiresAt"], .null)
        let plain = try await h.call("offline.add", ["productId": "tr-3"])
        XCTAssertNil(plain["license"], "no license key when there is none")
        let noLicense = await XCTAssertThrowsAsync {
            _ = try await h.call("offline.renewLicense", ["token": .string(plain["token"]?.stringValue ?? "")])
        }
        XCTAssertEqual((noLicense as? RPCError)?.name, "NoLicense")

        // Bad terms name the field and change nothing.
        for params: JSONValue in [
            ["productId": "tr-3", "rentalSeconds": -5], ["productId": "tr-3", "rentalSeconds": 1.5],
            ["productId": "tr-3", "rentalSeconds": 60, "purchase": true],
        ] {
            let bad = await XCTAssertThrowsAsync { _ = try await h.call("offline.add", params) }
            XCTAssertEqual((bad as? RPCError)?.code, -32602, "\(params)")
        }
        print("licenses: rental \(Int(expiresAt.timeIntervalSince(requestedAt))) s → not valid after +2 h → renewed without download; purchase expiresAt null")
    }

    func testPreloadedLicenseKeysAreStoredAndDeletedWithTheToken() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        try h.start()
        // vid-1 is encrypted: its license needs the product's security token and carries keys.
        let preloaded = try await h.call("offline.preloadLicense", ["productId": "vid-1", "rentalSeconds": 86_400])
        let token = try XCTUnwrap(preloaded["token"]?.stringValue)
        XCTAssertEqual(preloaded["state"]?.stringValue, "discovered")
        let license = try XCTUnwrap(preloaded["license"]?.objectValue, "\(preloaded)")
        let licenseId = try XCTUnwrap(license["licenseId"]?.stringValue)
        let keyIds = (license["keyIds"]?.arrayValue ?? []).compactMap(\.stringValue)
        XCTAssertFalse(keyIds.isEmpty)

        // The keys are in the catalog (never in status), equal to what the origin serves under
        // the license.
        let stored = try await h.catalogPool().read { db in
            try Data.fetchOne(db, sql: "SELECT keys FROM licenses WHERE id = ?", arguments: [licenseId])
        }
        let keys = try JSONValue.parse(Array(try XCTUnwrap(stored)))
        for keyId in keyIds {
            let served = try await h.api.get("/v1/keys/\(keyId)", headers: ["X-License": licenseId])
            XCTAssertEqual(served.status, 200)
            XCTAssertEqual(keys[keyId]?.stringValue, Data(served.body).base64EncodedString(), keyId)
        }
        XCTAssertFalse(
            String(decoding: preloaded.serialized(), as: UTF8.self).contains(keys[keyIds[0]]?.stringValue ?? "-"),
            "key bytes never leave the catalog through the socket")
        for file in ["catalog.sqlite", "catalog.sqlite-wal", "catalog.sqlite-shm"] {
            let mode = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: h.dir.stateDir + "/" + file)[.posixPermissions] as? Int)
            XCTAssertEqual(mode & 0o007, 0, "\(file) is closed to other users: \(String(mode, radix: 8))")
        }

        // Preloading again renews the license of the same token.
        let second = try await h.call("offline.preloadLicense", ["productId": "vid-1", "rentalSeconds": 86_400])
        XCTAssertEqual(second["token"]?.stringValue, token)
        XCTAssertNotEqual(second["license"]?["licenseId"]?.stringValue, licenseId)

        // Deleting the token deletes its license and keys.
        _ = try await h.call("offline.delete", ["token": .string(token)])
        let left = try await h.catalogPool().read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM licenses WHERE token = ?", arguments: [token])
        }
        XCTAssertEqual(left, 0)
        let status = try await h.call("offline.status", ["token": .string(token)])
        XCTAssertNil(status["license"])
        print("preload: vid-1 license with \(keyIds.count) key(s) in the catalog, deleted with the token")
    }
}
