import Foundation
import XCTest

@testable import Wire

/// The hand-written reader against Foundation's decoder: same values, same refusals.
final class JSONReaderTests: XCTestCase {
    let valid = [
        "{}", "[]", "0", "-0", "1.5", "-12.5e-3", "1E+2", "true", "false", "null", "\"\"",
        #"{"a":[1,2,{"b":null}],"c":"d"}"#, " \n\t{ \"x\" : 1 } \r\n",
        #""esc \" \\ \/ \b \f \n \r \t \u00e9 \ud83c\udfb5 \u0000""#,
        #"{"jsonrpc":"2.0","id":7,"method":"stations.list","params":{"stationId":"st-9"}}"#,
        "123456789012345", "[1e308]", "\"é🎵\"",
    ]
    let invalid = [
        "", " ", "{", "}", "[1,]", "{\"a\":1,}", "{a:1}", "01", "1.", ".5", "+1", "1e", "--1",
        "tru", "nul", "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"", "{} {}", "[1 2]",
        "\"tab\there\"", "NaN", "Infinity", "1e999", "{\"a\" 1}",
    ]

    func testValidDocumentsReadAsFoundationReadsThem() throws {
        for text in valid {
            let ours = try JSONReader.parse(Array(text.utf8))
            let theirs = try JSONCoding.decoder().decode(JSONValue.self, from: Data(text.utf8))
            XCTAssertEqual(ours, theirs, text)
        }
    }

    func testInvalidDocumentsAreRefused() {
        for text in invalid {
            XCTAssertThrowsError(try JSONReader.parse(Array(text.utf8)), "accepted \(text)")
        }
    }

    func testDeepNestingIsRefusedNotACrash() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        XCTAssertThrowsError(try JSONReader.parse(Array(deep.utf8)))
        let fine = String(repeating: "[", count: 500) + String(repeating: "]", count: 500)
        XCTAssertNoThrow(try JSONReader.parse(Array(fine.utf8)))
    }

    func testWriterOutputReadsBackToTheSameValue() throws {
        let value: JSONValue = ["k": ["a\u{01}b", 1, -2.25, true, nil, ["x": []]]]
        XCTAssertEqual(try JSONReader.parse(JSONWriter.write(value)), value)
    }
}
