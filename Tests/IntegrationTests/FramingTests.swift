import Foundation
import TestSupport
import Wire
import XCTest

/// Every framing edge case of docs/protocol.md, against the real player binary over its socket,
/// each checked while a second client keeps being served.
final class FramingTests: XCTestCase {
    var dir: TestDirectory!
    var player: ServiceProcess!

    override func setUpWithError() throws {
        dir = try TestDirectory()
        // A short idle limit keeps the idle test quick; everything else uses the defaults.
        let config = try dir.writeConfig(#"{"wire":{"idleTimeoutSeconds":1.5}}"#)
        player = try ServiceProcess("player", in: dir, extraArgs: ["--config", config, "--audio-device", "null"])
        try player.waitReady()
    }

    override func tearDown() {
        player?.kill9()
        dir?.remove()
    }

    /// Asserts the service still answers a fresh client.
    func assertOthersServed(file: StaticString = #filePath, line: UInt = #line) throws {
        let other = try player.raw()
        try other.send(RawSocket.request(id: 99, method: "service.status"))
        let answer = try other.readFrame()
        XCTAssertEqual(answer?["id"], 99, file: file, line: line)
        XCTAssertEqual(answer?["result"]?["service"], "player", file: file, line: line)
    }

    func assertProtocolError(_ bytes: [UInt8], name: String, code: Int, file: StaticString = #filePath, line: UInt = #line) throws {
        let conn = try player.raw()
        let bystander = try player.raw()
        try conn.send(bytes)
        let answer = try XCTUnwrap(try conn.readFrame(), "no answer before close", file: file, line: line)
        XCTAssertEqual(answer["id"], .null, file: file, line: line)
        XCTAssertEqual(answer["error"]?["code"]?.intValue, code, file: file, line: line)
        XCTAssertEqual(answer["error"]?["data"]?["name"]?.stringValue, name, file: file, line: line)
        XCTAssertFalse((answer["error"]?["message"]?.stringValue ?? "").isEmpty, file: file, line: line)
        XCTAssertTrue(try conn.waitClosed(timeout: 5), "connection left open after a protocol error", file: file, line: line)
        // A connection opened before the bad one is unaffected.
        try bystander.send(RawSocket.request(id: 1, method: "service.status"))
        XCTAssertEqual(try bystander.readFrame()?["id"], 1, file: file, line: line)
        try assertOthersServed(file: file, line: line)
    }

    func testZeroLengthFrameIsAnsweredThenClosed() throws {
        try assertProtocolError([0, 0, 0, 0], name: "EmptyFrame", code: -32600)
    }

    func testOversizeFrameIsRefusedFromItsHeaderAlone() throws {
        // Only the header of a 2 MiB frame: the answer must not wait for the body.
        try assertProtocolError([0, 0x20, 0, 0], name: "FrameTooLarge", code: -32600)
    }

    func testSecondFrameAfterOversizeIsNotRead() throws {
        let conn = try player.raw()
        try conn.send([0xff, 0xff, 0xff, 0xff] + RawSocket.request(id: 5, method: "service.status"))
        let first = try XCTUnwrap(try conn.readFrame())
        XCTAssertEqual(first["error"]?["data"]?["name"], "FrameTooLarge")
        // The next thing on the connection is its close, not an answer to id 5.
        XCTAssertNil(try conn.readFrame())
    }

    func testInvalidUTF8IsAParseError() throws {
        try assertProtocolError(RawSocket.frame([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]), name: "ParseError", code: -32700)
    }

    func testInvalidJSONIsAParseError() throws {
        try assertProtocolError(RawSocket.frame(#"{"jsonrpc":"2.0","id":1,"method":"#), name: "ParseError", code: -32700)
    }

    func testNonObjectIsAnInvalidRequest() throws {
        try assertProtocolError(RawSocket.frame("[1,2,3]"), name: "InvalidRequest", code: -32600)
        try assertProtocolError(RawSocket.frame("42"), name: "InvalidRequest", code: -32600)
    }

    func testLeadingByteOrderMarkIsSkipped() throws {
        let conn = try player.raw()
        let json = #"{"jsonrpc":"2.0","id":3,"method":"service.status"}"#
        try conn.send(RawSocket.frame([0xEF, 0xBB, 0xBF] + Array(json.utf8)))
        let answer = try XCTUnwrap(try conn.readFrame())
        XCTAssertEqual(answer["id"], 3)
        XCTAssertEqual(answer["result"]?["service"], "player")
        // The connection stays usable, with or without a mark.
        try conn.send(RawSocket.request(id: 4, method: "service.status"))
        XCTAssertEqual(try conn.readFrame()?["id"], 4)
    }

    func testByteOrderMarkAfterWhitespaceIsAParseError() throws {
        let json = #"{"jsonrpc":"2.0","id":3,"method":"service.status"}"#
        try assertProtocolError(RawSocket.frame([0x20, 0xEF, 0xBB, 0xBF] + Array(json.utf8)), name: "ParseError", code: -32700)
    }

    func testFrameSplitAcrossManyWritesIsAnswered() throws {
        let conn = try player.raw()
        for byte in RawSocket.request(id: 7, method: "service.status") {
            try conn.send([byte])
            usleep(500)
        }
        XCTAssertEqual(try conn.readFrame()?["result"]?["service"], "player")
    }

    func testManyFramesInOneWriteAreAllAnswered() throws {
        let conn = try player.raw()
        let bytes = (1...100).flatMap { RawSocket.request(id: $0, method: "service.status") }
        try conn.send(bytes)
        var ids = Set<Int>()
        for _ in 1...100 {
            let answer = try XCTUnwrap(try conn.readFrame())
            XCTAssertEqual(answer["result"]?["service"], "player")
            ids.insert(answer["id"]?.intValue ?? -1)
        }
        XCTAssertEqual(ids, Set(1...100))
    }

    func testUnknownMethodKeepsTheConnection() throws {
        let conn = try player.raw()
        try conn.send(RawSocket.request(id: 1, method: "no.such.method"))
        let answer = try XCTUnwrap(try conn.readFrame())
        XCTAssertEqual(answer["id"], 1)
        XCTAssertEqual(answer["error"]?["code"]?.intValue, -32601)
        XCTAssertEqual(answer["error"]?["data"]?["name"], "MethodNotFound")
        try conn.send(RawSocket.request(id: 2, method: "service.status"))
        XCTAssertEqual(try conn.readFrame()?["id"], 2)
    }

    func testInvalidParamsNameTheField() throws {
        let conn = try player.raw()
        try conn.send(RawSocket.request(id: 1, method: "events.subscribe", params: #"{"topics":5}"#))
        let answer = try XCTUnwrap(try conn.readFrame())
        XCTAssertEqual(answer["error"]?["code"]?.intValue, -32602)
        XCTAssertEqual(answer["error"]?["data"]?["name"], "InvalidParams")
        XCTAssertTrue(answer["error"]?["message"]?.stringValue?.contains("params.topics") ?? false, "\(answer)")
        try conn.send(RawSocket.request(id: 2, method: "events.subscribe", params: #"{"topics":["bogus"]}"#))
        XCTAssertTrue(try conn.readFrame()?["error"]?["message"]?.stringValue?.contains("bogus") ?? false)
        try conn.sendFrame(#"{"jsonrpc":"2.0","id":3,"method":"service.status","params":[1]}"#)
        XCTAssertEqual(try conn.readFrame()?["error"]?["code"]?.intValue, -32602)
    }

    func testBadEnvelopeIsAnsweredWithItsIdAndKeepsTheConnection() throws {
        let conn = try player.raw()
        try conn.sendFrame(#"{"jsonrpc":"1.0","id":"abc","method":"service.status"}"#)
        let answer = try XCTUnwrap(try conn.readFrame())
        XCTAssertEqual(answer["id"], "abc")
        XCTAssertEqual(answer["error"]?["code"]?.intValue, -32600)
        try conn.sendFrame(#"{"jsonrpc":"2.0","id":"def"}"#)
        XCTAssertEqual(try conn.readFrame()?["error"]?["code"]?.intValue, -32600)
        try conn.send(RawSocket.request(id: 4, method: "service.status"))
        XCTAssertEqual(try conn.readFrame()?["id"], 4)
    }

    func testNotificationGetsNoResponse() throws {
        let conn = try player.raw()
        try conn.sendFrame(#"{"jsonrpc":"2.0","method":"service.status"}"#)
        try conn.send(RawSocket.request(id: 11, method: "service.status"))
        // The first frame back answers id 11: the notification produced nothing.
        XCTAssertEqual(try conn.readFrame()?["id"], 11)
    }

    func testTwoHundredConcurrentClients() async throws {
        let path = player.socketPath
        try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 0..<200 {
                group.addTask {
                    let client = try await RPCClient.connect(path: path)
                    defer { Task { await client.close() } }
                    let result = try await client.call("service.status", timeout: .seconds(30))
                    XCTAssertEqual(result["service"], "player")
                    return i
                }
            }
            var seen = 0
            for try await _ in group { seen += 1 }
            XCTAssertEqual(seen, 200)
        }
    }

    func testPartialFrameLeftIdleIsClosedWhileOthersAreServed() throws {
        let idle = try player.raw()
        try idle.send([0, 0, 0, 50, 0x7b]) // a 50-byte frame, 1 byte of it sent
        // Meanwhile another client is served normally.
        try assertOthersServed()
        let started = Date()
        XCTAssertTrue(try idle.waitClosed(timeout: 10), "partial frame kept open past the idle limit")
        XCTAssertGreaterThan(Date().timeIntervalSince(started), 0.5, "closed before the idle limit")
        try assertOthersServed()
    }

    func testConnectionIdleBetweenFramesStaysOpen() throws {
        let conn = try player.raw()
        try conn.send(RawSocket.request(id: 1, method: "service.status"))
        XCTAssertNotNil(try conn.readFrame())
        // Longer than the 1.5 s idle limit, but no partial frame is pending.
        XCTAssertFalse(try conn.waitClosed(timeout: 2.5))
        try conn.send(RawSocket.request(id: 2, method: "service.status"))
        XCTAssertEqual(try conn.readFrame()?["id"], 2)
    }
}
