import Foundation
import XCTest

@testable import Wire

final class EnvelopeTests: XCTestCase {
    func testValidRequestParses() throws {
        let value: JSONValue = ["jsonrpc": "2.0", "id": 7, "method": "stations.list", "params": ["a": 1]]
        let request = try RPCRequest.parse(value).get()
        XCTAssertEqual(request.id, .number(7))
        XCTAssertEqual(request.method, "stations.list")
        XCTAssertEqual(request.params["a"], 1)
    }

    func testAbsentParamsReadAsEmptyObjectAndAbsentIdIsANotification() throws {
        let request = try RPCRequest.parse(["jsonrpc": "2.0", "method": "x"]).get()
        XCTAssertNil(request.id)
        XCTAssertEqual(request.params, .object([:]))
    }

    func testEnvelopeErrorsKeepTheIdWhenReadable() {
        func rejected(_ v: JSONValue) -> RejectedRequest? {
            if case .failure(let r) = RPCRequest.parse(v) { return r }
            return nil
        }
        XCTAssertEqual(rejected(["jsonrpc": "1.0", "id": "a", "method": "x"])?.id, .string("a"))
        XCTAssertEqual(rejected(["jsonrpc": "2.0", "id": 3])?.error.code, -32600)
        XCTAssertEqual(rejected(["jsonrpc": "2.0", "id": 3, "method": "x", "params": [1]])?.error.code, -32602)
        XCTAssertNil(rejected(["jsonrpc": "2.0", "id": true, "method": "x"])?.id)
        XCTAssertEqual(rejected(["jsonrpc": "2.0", "id": 1.5, "method": "x"])?.error.code, -32600)
    }

    func testErrorRoundTripsWithItsName() {
        let e = RPCError(code: 1001, name: "CacheLimit", message: "Need 5 MB more.", details: ["missingBytes": 5_000_000])
        let back = RPCError(json: e.json)
        XCTAssertEqual(back, e)
        XCTAssertEqual(e.json["data"]?["name"], "CacheLimit")
    }

    func testEventRoundTrips() {
        let e = RPCEvent(topic: "player", type: "PlaybackStateChanged", seq: 42, data: ["playbackState": "PLAYING"])
        XCTAssertEqual(RPCEvent(json: e.json), e)
        XCTAssertEqual(e.json["method"], "event")
    }

    func testJSONValueIntegersPrintWithoutFraction() throws {
        let text = String(decoding: JSONCoding.data(["n": 3, "x": 1.5, "s": "a/b"]), as: UTF8.self)
        XCTAssertEqual(text, #"{"n":3,"s":"a/b","x":1.5}"#)
    }

    func testInvalidParamsMessageNamesTheMissingField() throws {
        struct P: Decodable {
            var stationId: String
            var targetMinutes: Int?
        }
        do {
            _ = try JSONCoding.decode(P.self, from: ["targetMinutes": 5])
            XCTFail("expected a failure")
        } catch let error as DecodingError {
            XCTAssertEqual(RPCContext.describe(error, method: "stations.sync"), "'stations.sync' needs params.stationId.")
        }
        do {
            _ = try JSONCoding.decode(P.self, from: ["stationId": "a", "targetMinutes": "x"])
            XCTFail("expected a failure")
        } catch let error as DecodingError {
            XCTAssertEqual(RPCContext.describe(error, method: "stations.sync"), "params.targetMinutes of 'stations.sync' must be a number.")
        }
    }
}

extension EnvelopeTests {
    /// The hand-written writer must agree with Foundation's encoder on every kind of value.
    func testWriterMatchesFoundationsEncoder() throws {
        let value: JSONValue = [
            "z": [1, 2.5, -3, 0, 10, -100, 8_999_999_999_999_999, -123_456_789_012_345, 1e-7, 5e20, true, false, nil],
            "a": "quote\" backslash\\ slash/ newline\n tab\t bell\u{07} é 🎵",
            "m": ["nested": ["": 0]],
            "e": [],
            "o": [:],
        ]
        let ours = JSONCoding.data(value)
        let foundation = try [UInt8](JSONCoding.encoder().encode(value))
        XCTAssertEqual(String(decoding: ours, as: UTF8.self), String(decoding: foundation, as: UTF8.self))
        XCTAssertEqual(try JSONCoding.decoder().decode(JSONValue.self, from: Data(ours)), value)
    }

    /// Many members, long keys and keys that share a prefix still come out in Foundation's order.
    func testWriterSortsManyMembersAsFoundationDoes() throws {
        var members: [String: JSONValue] = [:]
        for i in 0..<40 { members["key-\(i)-" + String(repeating: "x", count: i % 20)] = .number(Double(i)) }
        members["k"] = "short"
        members["ké"] = "non-ASCII"
        members["K"] = "upper"
        let value = JSONValue.object(members)
        let foundation = try [UInt8](JSONCoding.encoder().encode(value))
        XCTAssertEqual(String(decoding: JSONCoding.data(value), as: UTF8.self), String(decoding: foundation, as: UTF8.self))
    }

    /// An answer written straight to bytes is byte for byte its envelope written as a value.
    func testResponseBytesEqualTheEnvelopeWritten() {
        let responses = [
            RPCResponse(id: .number(7), outcome: .success(["b": 1, "a": [true, nil]])),
            RPCResponse(id: .string("x\"y"), outcome: .success(.null)),
            RPCResponse(id: nil, outcome: .failure(.methodNotFound("nope"))),
            RPCResponse(id: .number(-3), outcome: .failure(.invalidParams("'params.x' is wrong"))),
        ]
        for response in responses {
            XCTAssertEqual(String(decoding: response.bytes, as: UTF8.self), String(decoding: JSONCoding.data(response.json), as: UTF8.self))
        }
    }

    func testNonFiniteNumbersPrintAsNull() {
        XCTAssertEqual(String(decoding: JSONCoding.data(["x": .number(.nan)]), as: UTF8.self), #"{"x":null}"#)
    }
}
