import Foundation

/// The reference origin serving a data folder on a free loopback port, for the benchmarks.
struct OriginServer {
    var child: Child
    /// The port it listens on, as its port file gives it.
    var port: String
    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Starts `cassette-origin serve --data DATA` plus `extra` arguments and returns once it
    /// wrote its port file.
    static func start(
        binary: String, data: String, portFile: String, extra: [String] = [], log: String,
        timeoutSeconds: Double = 60
    ) throws -> OriginServer {
        let child = try ChildProcesses.shared.launch(binary, ["serve", "--data", data, "--port-file", portFile] + extra, logFile: log)
        let until = deadline(after: timeoutSeconds)
        while !FileManager.default.fileExists(atPath: portFile) {
            guard child.isRunning, monotonicNanos() < until else { throw BenchError("the origin did not start; see \(log)") }
            sleepMicros(10_000)
        }
        // The file is written whole by a rename, but give the listener a moment to be reachable.
        sleepMicros(50_000)
        let port = try String(contentsOfFile: portFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        return OriginServer(child: child, port: port)
    }
}
