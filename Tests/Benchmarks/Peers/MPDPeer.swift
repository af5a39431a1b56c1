import Foundation

/// One connection to MPD's line protocol: greeted with "OK MPD x.y.z"; a command's answer
/// is "key: value" lines ending in "OK" (or one "ACK [...]" line on error).
final class MPDConnection: StatusConnection {
    private let socket: RawUnixSocket
    private static let statusCommand = Array("status\n".utf8)
    /// "0.23.12" from the greeting.
    let protocolVersion: String

    init(path: String, ioTimeout: Double, connectUntil: UInt64) throws {
        socket = try RawUnixSocket.connect(path: path, timeoutSeconds: ioTimeout, until: connectUntil)
        protocolVersion = try socket.withLine { line in
            guard line.hasPrefix("OK MPD ") else { throw BenchError("unexpected MPD greeting: \(line.string)") }
            return String(line.string.dropFirst("OK MPD ".count))
        }
    }

    func status() throws {
        try socket.send(Self.statusCommand)
        var lines = 0
        for _ in 0..<10_000 {
            let done = try socket.withLine { line -> Bool in
                if line.count == 2 && line.hasPrefix("OK") { return true }
                if line.hasPrefix("ACK") { throw BenchError("MPD refused status: \(line.string)") }
                return false
            }
            if done {
                guard lines > 0 else { throw BenchError("MPD answered status with no fields") }
                return
            }
            lines += 1
        }
        throw BenchError("MPD's status answer did not end within 10 000 lines")
    }
}

/// A private MPD instance in `root/m`: its own config, socket, database and state, the
/// `null` audio output, an empty music directory; run in the foreground (`--no-daemon`).
struct MPDSetup {
    let executable: String
    let dir: String
    var configPath: String { dir + "/mpd.conf" }
    var socketPath: String { dir + "/mpd.sock" }
    var logPath: String { dir + "/mpd.stderr.log" }

    init(executable: String, root: String) throws {
        self.executable = executable
        dir = root + "/m"
        try FileManager.default.createDirectory(atPath: dir + "/music", withIntermediateDirectories: true)
        let config = """
            music_directory    "\(dir)/music"
            db_file            "\(dir)/database"
            state_file         "\(dir)/state"
            log_file           "\(dir)/mpd.log"
            pid_file           "\(dir)/mpd.pid"
            bind_to_address    "\(socketPath)"
            auto_update        "no"
            zeroconf_enabled   "no"
            audio_output {
                type "null"
                name "null"
            }

            """
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
    }

    func launch() throws -> Child {
        try ChildProcesses.shared.launch(executable, ["--no-daemon", configPath], logFile: logPath)
    }

    /// Starts MPD and waits (bounded) until it answers `status`; returns the process and
    /// the MPD version from its greeting.
    func start(ioTimeout: Double, startTimeout: Double) throws -> (Child, String) {
        unlink(socketPath)
        let process = try launch()
        let connection = try MPDConnection(path: socketPath, ioTimeout: ioTimeout, connectUntil: deadline(after: startTimeout))
        try connection.status()
        return (process, connection.protocolVersion)
    }
}
