import TestSupport
import Wire
import XCTest

@testable import player

/// The player's error table and docs/protocol.md agree, both ways.
final class ErrorTableTests: XCTestCase {
    func testEveryPlayerErrorIsDocumentedWithItsCode() throws {
        let table = PlayerError.Code.all.map { (name: $0.name, code: $0.number) }
        XCTAssertEqual(Set(table.map(\.code)).count, table.count, "codes are unique")
        XCTAssertEqual(try ErrorDocs.mismatches(table: table, range: 2000...2999), [])
    }
}
