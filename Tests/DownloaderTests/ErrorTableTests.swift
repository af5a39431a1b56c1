import TestSupport
import Wire
import XCTest

@testable import downloader

/// The downloader's error table and docs/protocol.md agree, both ways.
final class ErrorTableTests: XCTestCase {
    func testEveryDownloaderErrorIsDocumentedWithItsCode() throws {
        let table = DownloaderError.Kind.allCases.map { (name: $0.name, code: $0.rawValue) }
        XCTAssertEqual(
            try ErrorDocs.mismatches(
                table: table, range: 1000...1999,
                shared: Set(RPCErrorKind.numbered.map(\.name))), [])
    }

    func testEverySharedErrorIsDocumentedWithItsCode() throws {
        let table = RPCErrorKind.numbered.map { (name: $0.name, code: $0.code) }
        XCTAssertEqual(try ErrorDocs.mismatches(table: table, range: 1010...1019), [])
    }
}
