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
        return try socket.call(id: nextID, method, params: params)
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
