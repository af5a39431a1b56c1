import TestSupport
import Wire
import XCTest

@testable import reporter

/// The reporter's error table and docs/protocol.md agree, both ways.
final class ErrorTableTests: XCTestCase {
    func testEveryReporterErrorIsDocumentedWithItsCode() throws {
        let table = ReporterError.Kind.allCases.map { (name: $0.rawValue, code: $0.code) }
        XCTAssertEqual(try ErrorDocs.mismatches(table: table, range: 3000...3999), [])
    }
}
