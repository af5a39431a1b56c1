import Wire
import XCTest

@testable import cassettectl

/// `cassettectl catalog … --sort`: KEY, KEY:asc and KEY:desc become the methods' sort descriptors.
final class CatalogSortTests: XCTestCase {
    func testSortKeysBecomeDescriptorsInOrder() throws {
        XCTAssertNil(try CatalogCommand.sortParam([]))
        let descriptors = try CatalogCommand.sortParam(["priority:desc", "title", "sizeBytes:ASC"])
        XCTAssertEqual(
            descriptors,
            [
                ["key": "priority", "ascending": false], ["key": "title", "ascending": true],
                ["key": "sizeBytes", "ascending": true],
            ])
    }

    func testABadOrderIsRefusedBeforeAnyCall() {
        XCTAssertThrowsError(try CatalogCommand.sortParam(["title:sideways"]))
        XCTAssertThrowsError(try CatalogCommand.sortParam([":desc"]))
    }
}
