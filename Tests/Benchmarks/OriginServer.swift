import Foundation

/// The reference origin serving a data folder on a free loopback port, for the benchmarks.
enum OriginServer {
    /// Starts `cassette-origin serve --data DATA` plus `extra` arguments and returns its base
    /// URL once it wrote its port file.
    static func start(binary: String, data: String, portFile: String, extra: [String] = [], log: String,
                      timeoutSeconds: Double = 60) throws -> (Child, String) {
        let child = try ChildProcesses.shared.launch(binary, ["serve", "--data", data, "--port-file", portFile] + extra, logFile: log)
        let until = deadline(after: timeoutSeconds)
        while !FileManager.default.fileExists(atPath: portFile) {
            guard child.isRunning, monotonicNanos() < until else { throw BenchError("the origin did not start; see \(log)") }
            sleepMicros(10_000)
        }
        // The file is written whole by a rename, but give the listener a moment to be reachable.
        sleepMicros(50_000)
        let port = try String(contentsOfFile: portFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        return (child, "http://127.0.0.1:\(port)")
    }
}
