import Wire
import XCTest

@testable import cassettectl

final class OfflineRefTests: XCTestCase {
    let items: [JSONValue] = [
        ["token": "2f0a3c1e-0b1d-4c7a-9a55-5d3b8c1e7f00", "productId": "tr-1", "requestedProductId": "tr-1", "state": "cached"],
        ["token": "7d1e0b52-6c1f-4a43-8e0d-2f4b1c9a3e11", "productId": "tr-7b", "requestedProductId": "tr-7", "state": "cached"],
        ["token": "a6f2c0d4-3b8e-4f19-b7a2-0c5d9e1f4a22", "productId": "tr-9", "requestedProductId": "tr-9", "state": "failed"],
        ["token": "c3b7e9a1-5d2f-4e60-9c18-7a0b4d6e2f33", "productId": "tr-9", "requestedProductId": "tr-9x", "state": "cached"],
    ]

    func testTokensAreRecognisedWithoutAsking() {
        XCTAssertTrue(OfflineRef.looksLikeToken("2f0a3c1e-0b1d-4c7a-9a55-5d3b8c1e7f00"))
        XCTAssertFalse(OfflineRef.looksLikeToken("tr-1"))
    }

    func testAProductIdNamesItsOnlyOffline() {
        XCTAssertEqual(OfflineRef.matches("tr-1", in: items).map { $0["token"] }, ["2f0a3c1e-0b1d-4c7a-9a55-5d3b8c1e7f00"])
        // Requested or actual id.
        XCTAssertEqual(OfflineRef.matches("tr-7", in: items).count, 1)
        XCTAssertEqual(OfflineRef.matches("tr-7b", in: items).count, 1)
        XCTAssertNil(OfflineRef.failure("tr-7", OfflineRef.matches("tr-7", in: items)))
    }

    func testAmbiguousAndUnknownProductsFailClearly() throws {
        let found = OfflineRef.matches("tr-9", in: items)
        XCTAssertEqual(found.count, 2)
        let ambiguous = try XCTUnwrap(OfflineRef.failure("tr-9", found))
        XCTAssertEqual(ambiguous.name, "AmbiguousOffline")
        XCTAssertEqual(ambiguous.exit, 64)
        XCTAssertTrue(ambiguous.message.contains("a6f2c0d4-3b8e-4f19-b7a2-0c5d9e1f4a22 (tr-9, failed)"), ambiguous.message)
        XCTAssertTrue(ambiguous.message.contains("c3b7e9a1-5d2f-4e60-9c18-7a0b4d6e2f33 (tr-9x→tr-9, cached)"), ambiguous.message)
        let unknown = try XCTUnwrap(OfflineRef.failure("tr-404", OfflineRef.matches("tr-404", in: items)))
        XCTAssertEqual(unknown.name, "UnknownOffline")
        XCTAssertTrue(unknown.hint?.contains("cassettectl offline list") ?? false)
    }
}
