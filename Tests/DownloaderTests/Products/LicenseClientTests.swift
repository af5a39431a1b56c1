import Foundation
import HTTPClient
import OriginClient
import TestSupport
import Wire
import XCTest

@testable import downloader

/// `LicenseClient` against the real origin: keys from the license answer and from
/// `GET /v1/keys/{keyId}` with `X-License`, and the answers it must refuse.
final class LicenseClientTests: XCTestCase {
    private var origin: OriginProcess!

    override func setUpWithError() throws {
        origin = try OriginProcess.start()
    }

    override func tearDown() {
        origin?.discard()
    }

    private func client() throws -> LicenseClient {
        let origin = try OriginClient(baseURL: origin.baseURL, credentials: BasicCredentials(token: "demo", secret: "demo"))
        return LicenseClient(origin: origin, now: { Date() })
    }

    func testKeysComeWithTheLicenseAndFromTheKeyEndpoint() async throws {
        let licenses = try client()
        let license = try await licenses.request(
            productId: "vid-1", securityToken: "lst-vid-1", terms: .rental(seconds: 60),
            keyIds: ["k-vid-1"])
        XCTAssertEqual(license.terms, .rental(seconds: 60))
        let expiresAt = try XCTUnwrap(license.expiresAt)
        XCTAssertEqual(expiresAt.timeIntervalSince(license.requestedAt), 60, accuracy: 2)
        let key = try XCTUnwrap(license.keys["k-vid-1"])
        XCTAssertEqual(key.count, 16)
        // The key endpoint gives the same bytes under the license, and refuses without one.
        let fetched = try await licenses.fetchKey("k-vid-1", licenseId: license.id)
        XCTAssertEqual(fetched, key)
        do {
            _ = try await licenses.fetchKey("k-vid-1", licenseId: "lic-forged")
            XCTFail("a forged license got a key")
        } catch let error as OriginError {
            XCTAssertEqual(error.status, 403)
        }
        // A wrong security token is the origin's refusal, not a license.
        do {
            _ = try await licenses.request(productId: "vid-1", securityToken: "wrong", terms: .purchase, keyIds: [])
            XCTFail("a wrong security token got a license")
        } catch let error as OriginError {
            XCTAssertEqual(error.status, 403)
        }
    }

    func testAHostileLicenseAnswerIsRefused() async throws {
        let licenses = try client()
        let api = OriginAPI(origin: origin)
        let bad: [[String: Any]] = [
            ["body": ["licenseId": "lic-1", "expiresAt": NSNull(), "keys": ["k-vid-1": "AAAA"]]], // 3 bytes, not 16
            ["body": ["licenseId": "../../etc", "expiresAt": NSNull(), "keys": [:] as [String: Any]]],
            ["body": ["licenseId": "lic-2", "expiresAt": NSNull(), "keys": [:] as [String: Any]]], // a rental without expiry
        ]
        try await api.injectFaults("/v1/licenses", bad)
        for (index, terms) in [LicenseTerms.purchase, .purchase, .rental(seconds: 60)].enumerated() {
            do {
                _ = try await licenses.request(productId: "tr-1", securityToken: nil, terms: terms, keyIds: [])
                XCTFail("case \(index) was accepted")
            } catch let error as DownloaderError {
                XCTAssertEqual(error.name, "BadManifest", "case \(index)")
            }
        }
    }
}
