import Foundation
import Wire

#if canImport(Glibc)
    import Glibc
#endif

/// Connects to a service's socket once `child` listens there. A child that exits first, or
/// `seconds` without a connection, is an error naming `name`.
func connectWhenListening(_ socket: String, child: Child, name: String, seconds: Double) async throws -> RPCClient {
    let until = deadline(after: seconds)
    while true {
        if FileManager.default.fileExists(atPath: socket), let client = try? await RPCClient.connect(path: socket) {
            return client
        }
        guard child.isRunning else { throw BenchError("the \(name) exited at start; see its log") }
        guard monotonicNanos() < until else {
            throw BenchError("the \(name)'s socket \(socket) did not answer within \(Int(seconds)) s")
        }
        try await Task.sleep(nanoseconds: 5_000_000)
    }
}

/// A scratch folder for the player benchmarks (both peers): music, runtime, state and MPD
/// folders, and an `.asoundrc` in it, made HOME, whose `pcmName` PCM writes the raw frames it
/// gets to `pcmFile` (relative to the folder).
func makePlayerBenchRoot(prefix: String, pcmName: String, pcmFile: String) throws -> String {
    let root = try makeTempRoot(prefix: prefix)
    for sub in ["music", "run", "state/media/tracks", "m"] {
        try FileManager.default.createDirectory(atPath: "\(root)/\(sub)", withIntermediateDirectories: true)
    }
    try "pcm.\(pcmName) { type file; slave.pcm \"null\"; file \"\(root)/\(pcmFile)\"; format \"raw\" }\n"
        .write(toFile: "\(root)/.asoundrc", atomically: true, encoding: .utf8)
    setenv("HOME", root, 1)
    return root
}
