import NIOCore
import XCTest

@testable import Wire

/// A frame's payload as the server and the client read it: UTF-8 JSON, optionally behind
/// one leading byte-order mark.
final class FramePayloadTests: XCTestCase {
    let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
    let request = Array(#"{"jsonrpc":"2.0","id":1,"method":"service.status"}"#.utf8)

    func parse(_ bytes: [UInt8]) throws(RPCError) -> JSONValue {
        try FramePayload.json(ByteBuffer(bytes: bytes))
    }

    func assertParseError(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
        do {
            let value = try parse(bytes)
            XCTFail("accepted \(value)", file: file, line: line)
        } catch {
            XCTAssertEqual(error.name, "ParseError", file: file, line: line)
            XCTAssertEqual(error.code, -32700, file: file, line: line)
        }
    }

    func testLeadingByteOrderMarkIsSkipped() throws {
        XCTAssertEqual(try parse(bom + request), try parse(request))
        XCTAssertEqual(try parse(bom + request)["method"], "service.status")
    }

    func testByteOrderMarkBeforeWhitespaceIsSkipped() throws {
        XCTAssertEqual(try parse(bom + Array(" \n".utf8) + request)["id"], 1)
    }

    func testByteOrderMarkIsSkippedInAPayloadThatIsASlice() throws {
        // Frames reach the handler as slices of a larger read buffer.
        var buffer = ByteBuffer(bytes: [0, 0, 0, 0] + bom + request)
        buffer.moveReaderIndex(forwardBy: 4)
        XCTAssertEqual(try FramePayload.json(buffer)["id"], 1)
    }

    func testByteOrderMarkOnlyOnceAndOnlyFirst() {
        assertParseError(bom + bom + request)
        assertParseError(Array(" ".utf8) + bom + request)
        assertParseError(request + bom)
        assertParseError(bom)
    }

    func testPartialByteOrderMarkIsAParseError() {
        assertParseError([0xEF, 0xBB] + request)
        assertParseError([0xEF] + request)
    }

    func testInvalidUTF8AndInvalidJSONStayParseErrors() {
        assertParseError([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d])
        assertParseError(Array(#"{"jsonrpc":"2.0","id":1,"method":"#.utf8))
        assertParseError(Array("{}{}".utf8))
    }
}
