import Foundation
import Wire

/// One raw connection to a Cassette service: a 4-byte big-endian length, then the JSON-RPC
/// request; the answer is read the same way and must carry a `result`.
final class CassetteConnection: StatusConnection {
    private let socket: RawUnixSocket
    private var nextID = 0

    init(socket: RawUnixSocket) { self.socket = socket }

    convenience init(path: String, ioTimeout: Double, connectUntil: UInt64) throws {
        self.init(socket: try RawUnixSocket.connect(path: path, timeoutSeconds: ioTimeout, until: connectUntil))
    }

    func status() throws {
        _ = try call(keepBody: false)
    }

    /// Sends `service.status`; returns the answer's bytes when `keepBody` is set.
    func call(keepBody: Bool) throws -> [UInt8]? {
        nextID += 1
        return try socket.exchangeFrame(Array(#"{"jsonrpc":"2.0","id":\#(nextID),"method":"service.status"}"#.utf8)) { body in
            guard body.contains(#""result""#) else { throw BenchError("service.status failed: \(body.string)") }
            return keepBody ? Array(body) : nil
        }
    }

    /// Sends a method no service has: the protocol's own round trip (frame, envelope, dispatch,
    /// the error answer) without any method body.
    func noOp() throws {
        nextID += 1
        try socket.exchangeFrame(Array(#"{"jsonrpc":"2.0","id":\#(nextID),"method":"bench.noSuchMethod"}"#.utf8)) { body in
            guard body.contains(#""MethodNotFound""#) else { throw BenchError("expected MethodNotFound: \(body.string)") }
        }
    }

    /// Calls `method` with `params` (a JSON object's text) and returns its `result`; an error
    /// answer throws. For set-up steps, not for the timed loops.
    func call(_ method: String, params: String = "{}") throws -> JSONValue {
        nextID += 1
        return try socket.call(id: nextID, method, params: params)
    }

    /// The answer's `result` object, parsed (for the setup checks, not the timed loops).
    func statusResult() throws -> JSONValue {
        let body = try call(keepBody: true) ?? []
        guard let result = (try? JSONValue.parse(body))?["result"], result.objectValue != nil else {
            throw BenchError("service.status answered something else than an object: \(String(decoding: body, as: UTF8.self))")
        }
        return result
    }
}

/// A Cassette connection whose `status()` is `noOp()`, for the no-op loop.
final class NoOpConnection: StatusConnection {
    private let connection: CassetteConnection
    init(_ connection: CassetteConnection) { self.connection = connection }
    func status() throws { try connection.noOp() }
}

/// The Cassette player, started by the benchmark and bound to its own socket.
struct CassettePlayer {
    let process: Child
    let socketPath: String
    /// `version` and `pid` from the first `service.status`.
    let version: String

    /// Starts `player --runtime-dir root/p --state-dir root/ps` and waits (bounded) until its
    /// socket answers and its catalog is open, so the timed requests measure the steady state.
    static func start(binary: String, root: String, ioTimeout: Double, startTimeout: Double) throws -> CassettePlayer {
        let runtime = root + "/p", state = root + "/ps"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        let process = try ChildProcesses.shared.launch(
            binary, CassettePlayer.arguments(runtime: runtime, state: state),
            logFile: root + "/player.log")
        let socketPath = runtime + "/player.sock"
        let until = deadline(after: startTimeout)
        let connection = try CassetteConnection(path: socketPath, ioTimeout: ioTimeout, connectUntil: until)
        for _ in 0..<100_000 {
            let result = try connection.statusResult()
            if result["catalog"]?["state"] == "ready" {
                return CassettePlayer(process: process, socketPath: socketPath, version: result["version"]?.stringValue ?? "?")
            }
            guard monotonicNanos() < until else {
                throw BenchError("the player's catalog was not ready within \(startTimeout) s: \(result["catalog"] ?? .null)")
            }
            sleepMicros(5_000)
        }
        throw BenchError("the player's catalog never became ready")
    }

    /// The player's flags: an isolated runtime and state dir, and the `null` PCM so that no
    /// sound card is needed.
    static func arguments(runtime: String, state: String) -> [String] {
        ["--runtime-dir", runtime, "--state-dir", state, "--audio-device", "null", "--audio-pace", "realtime"]
    }
}
