import NIOCore
import XCTest

@testable import Wire

/// The server reads a frame's envelope members without building the request's dictionary
/// (`FramePayload.envelope`); it must accept, refuse and name errors exactly as reading the
/// whole frame (`FramePayload.json`) and checking it (`RPCRequest.parse`) does.
final class EnvelopeReaderTests: XCTestCase {
    /// What a server answers to one frame, by either path: the request, or the error with the id it carries.
    enum Outcome: Equatable {
        case request(id: RPCID?, method: String, params: JSONValue)
        case rejected(id: RPCID?, error: RPCError)
        case notAnObject
        case protocolError(RPCError)
    }

    static func fullPath(_ bytes: [UInt8]) -> Outcome {
        let value: JSONValue
        do { value = try FramePayload.json(ByteBuffer(bytes: bytes)) } catch { return .protocolError(error) }
        guard case .object = value else { return .notAnObject }
        return outcome(RPCRequest.parse(value))
    }

    static func envelopePath(_ bytes: [UInt8]) -> Outcome {
        let envelope: JSONReader.Envelope?
        do { envelope = try FramePayload.envelope(ByteBuffer(bytes: bytes)) } catch { return .protocolError(error) }
        guard let envelope else { return .notAnObject }
        return outcome(RPCRequest.parse(envelope))
    }

    static func outcome(_ result: Result<RPCRequest, RejectedRequest>) -> Outcome {
        switch result {
        case .success(let r): return .request(id: r.id, method: r.method, params: r.params)
        case .failure(let r): return .rejected(id: r.id, error: r.error)
        }
    }

    let frames: [String] = [
        #"{"jsonrpc":"2.0","id":1,"method":"service.status"}"#,
        #"{"jsonrpc":"2.0","id":"a","method":"x","params":{"b":[1,2,{"c":null}]}}"#,
        #" { "method" : "x" , "jsonrpc" : "2.0" } "#,
        #"{"jsonrpc":"2.0","method":"x","id":1,"id":2}"#,
        #"{"jsonrpc":"2.0","method":"x","method":"y","id":3}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"x","extra":{"deep":[true,false]}}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"x","params":null}"#,
        #"{"jsonrpc":"1.0","id":"a","method":"x"}"#,
        #"{"jsonrpc":"2.0","id":3}"#,
        #"{"jsonrpc":"2.0","id":true,"method":"x"}"#,
        #"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#,
        #"{"jsonrpc":"2.0","id":1,"method":""}"#,
        #"{"jsonrpc":"2.0","id":1,"method":7}"#,
        #"{"jsonr\u0070c":"2.0","id":1,"method":"m\u00e9thode"}"#,
        #"{}"#,
        #"[1,2]"#, #""text""#, #"42"#, #"null"#, #"[1,"#,
        #"{"jsonrpc":"2.0","id":1,"method":"x"}{}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"x"} x"#,
        #"{"jsonrpc":"2.0","id":1,"method":"x","#,
        #"{"jsonrpc":"2.0","id":1,"method":"x",}"#,
        #"{"jsonrpc":"2.0" "id":1}"#,
        #"{"jsonrpc" "2.0"}"#,
        #"{jsonrpc:"2.0"}"#,
        #"{"jsonrpc":"2.0","id":01,"method":"x"}"#,
        #"{"jsonrpc":"2.0","id":1e999,"method":"x"}"#,
        #"{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":"\ud800"}}"#,
        #"{"#, #"   "#, "",
        String(repeating: "[", count: 600),
        #"{"a":"# + String(repeating: "[", count: 600),
    ]

    func testEveryFrameGetsTheSameAnswerByBothPaths() {
        for frame in frames {
            let bytes = Array(frame.utf8)
            XCTAssertEqual(Self.envelopePath(bytes), Self.fullPath(bytes), frame)
            let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
            XCTAssertEqual(Self.envelopePath(bom + bytes), Self.fullPath(bom + bytes), "BOM + \(frame)")
        }
    }

    func testInvalidUTF8GetsTheSameAnswerByBothPaths() {
        let bytes: [UInt8] = [0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]
        XCTAssertEqual(Self.envelopePath(bytes), Self.fullPath(bytes))
        XCTAssertEqual(Self.envelopePath(bytes), .protocolError(.parseError("The frame is not valid UTF-8.")))
    }

    func testAnErrorIsWrittenAsItsJSON() {
        let errors: [RPCError] = [
            .methodNotFound("bench.noSuchMethod"), .parseError("quote \" and \\ and \n"),
            .invalidParams("'params' must be an object when present."),
            RPCError(code: 1001, name: "Busy", message: "wait", details: ["retryAfter": 2, "a": "b"]),
        ]
        for error in errors {
            var out: [UInt8] = []
            error.write(into: &out)
            XCTAssertEqual(String(decoding: out, as: UTF8.self), String(decoding: JSONWriter.write(error.json), as: UTF8.self))
        }
    }
}
