import Foundation
import Wire

/// One raw connection to the reporter that records a fresh play per call (`playlog.record`)
/// and waits for the durable answer: the same blocking client the status benchmark uses.
final class PlaylogConnection: StatusConnection {
    private let socket: RawUnixSocket
    private var nextID = 0

    init(path: String, ioTimeout: Double, connectUntil: UInt64) throws {
        socket = try RawUnixSocket.connect(path: path, timeoutSeconds: ioTimeout, until: connectUntil)
    }

    func status() throws {
        _ = try call("playlog.record", #"{"event":\#(PlaylogSample.event(id: UUID().uuidString.lowercased()))}"#)
    }

    /// Sends one request and returns its parsed answer; an error answer throws.
    @discardableResult
    func call(_ method: String, _ params: String = "{}") throws -> JSONValue {
        nextID += 1
        let json = Array(#"{"jsonrpc":"2.0","id":\#(nextID),"method":"\#(method)","params":\#(params)}"#.utf8)
        let n = UInt32(json.count)
        try socket.send([UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)] + json)
        let length = try socket.withBytes(4) { b in Int(b[0]) << 24 | Int(b[1]) << 16 | Int(b[2]) << 8 | Int(b[3]) }
        guard length > 0, length <= 16 << 20 else { throw BenchError("bad frame length \(length)") }
        let body = try socket.withBytes(length) { Array($0) }
        guard let answer = try? JSONValue.parse(body), let result = answer["result"] else {
            throw BenchError("\(method) failed: \(String(decoding: body, as: UTF8.self))")
        }
        return result
    }
}

/// The play event every benchmark client records (about 400 bytes of JSON, like a real one).
enum PlaylogSample {
    static func event(id: String) -> String {
        #"{"eventId":"\#(id)","productId":"tr-9-01","requestedProductId":"tr-9-01","stationId":"st-9","#
            + #""playbackSessionId":"6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5b","startedAt":"2026-11-21T10:00:00.000Z","#
            + #""endedAt":"2026-11-21T10:03:00.000Z","startPosition":0,"endPosition":180.5,"offline":true,"#
            + #""actions":[{"actionType":"PLAYBACK_START","assetPosition":0,"timestamp":1763719200000}]}"#
    }
}
