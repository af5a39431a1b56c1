import HTTPRanges
import XCTest

/// The one `Range` header parser of the reference origin and the local media server.
final class ByteRangeRequestTests: XCTestCase {
    func testSingleRangesAreParsedAndClamped() {
        XCTAssertEqual(ByteRangeRequest.parse("bytes=0-9", size: 100), .range(offset: 0, length: 10))
        XCTAssertEqual(ByteRangeRequest.parse("bytes=90-", size: 100), .range(offset: 90, length: 10))
        XCTAssertEqual(ByteRangeRequest.parse("bytes=-5", size: 100), .range(offset: 95, length: 5))
        XCTAssertEqual(ByteRangeRequest.parse("bytes=50-500", size: 100), .range(offset: 50, length: 50))
        XCTAssertEqual(ByteRangeRequest.parse(" Bytes = 1 - 2 ", size: 100), .whole, "no blanks inside the unit")
        XCTAssertEqual(ByteRangeRequest.parse("bytes= 1 - 2 ", size: 100), .range(offset: 1, length: 2))
    }

    func testRangesPastTheEndAreUnsatisfiable() {
        XCTAssertEqual(ByteRangeRequest.parse("bytes=100-", size: 100), .unsatisfiable)
        XCTAssertEqual(ByteRangeRequest.parse("bytes=-0", size: 100), .unsatisfiable)
        XCTAssertEqual(ByteRangeRequest.parse("bytes=-5", size: 0), .unsatisfiable)
    }

    func testMultipleOrMalformedRangesServeTheWholeBody() {
        XCTAssertEqual(ByteRangeRequest.parse(nil, size: 100), .whole)
        XCTAssertEqual(ByteRangeRequest.parse("bytes=0-1,5-6", size: 100), .whole)
        XCTAssertEqual(ByteRangeRequest.parse("bytes=9-3", size: 100), .whole)
        XCTAssertEqual(ByteRangeRequest.parse("items=0-1", size: 100), .whole)
        XCTAssertEqual(ByteRangeRequest.parse("bytes=x-", size: 100), .whole)
    }
}
