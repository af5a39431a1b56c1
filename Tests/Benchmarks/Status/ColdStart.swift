import Foundation

/// Start-up times of a service that was not running.
struct ColdStartResult: Codable, Sendable {
    /// First-ever start, on an empty state dir (catalog / database created). Not in the stats.
    var firstStartMillis: Double?
    /// Cassette: connect to the socket systemd-socket-activate holds → first answer.
    /// Nil for MPD, which has no socket activation in this setup.
    var connectToAnswer: LatencyStats?
    /// Launch of the process (systemd-socket-activate or mpd) → first answer.
    var launchToAnswer: LatencyStats
    var runs: Int
    var mode: String
}

enum ColdStart {
    struct Settings {
        var runs: Int
        var ioTimeout: Double
        var startTimeout: Double
    }

    /// `runs` + 1 cold starts of the player under `systemd-socket-activate -l PATH --fdname=player`:
    /// wait until the socket path exists, then time connect + service.status + answer. The
    /// first start (empty state dir) is reported apart. Each instance is stopped (SIGTERM)
    /// before the next one starts.
    static func cassette(player: String, activator: String, root: String, _ s: Settings) throws -> ColdStartResult {
        guard FileManager.default.isExecutableFile(atPath: player) else { throw BenchError("\(player) is missing or not executable") }
        let runtime = root + "/a", state = root + "/as"
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        let socketPath = runtime + "/player.sock"
        var connectSamples: [UInt64] = [], launchSamples: [UInt64] = []
        var first: Double?
        for run in 0...s.runs {
            unlink(socketPath)
            let launched = monotonicNanos()
            let process = try ChildProcesses.shared.launch(
                activator,
                ["-l", socketPath, "--fdname=player", player] + CassettePlayer.arguments(runtime: runtime, state: state),
                logFile: root + "/activation.log")
            defer { ChildProcesses.shared.stop(process) }
            try waitForPath(socketPath, process: process, seconds: s.startTimeout)
            let connecting = monotonicNanos()
            let connection = try CassetteConnection(
                path: socketPath, ioTimeout: s.startTimeout,
                connectUntil: deadline(after: s.startTimeout))
            try connection.status()
            let answered = monotonicNanos()
            if run == 0 {
                first = Double(answered - launched) / 1e6
            } else {
                connectSamples.append(answered - connecting)
                launchSamples.append(answered - launched)
            }
        }
        return ColdStartResult(
            firstStartMillis: first, connectToAnswer: LatencyStats(samples: connectSamples),
            launchToAnswer: LatencyStats(samples: launchSamples), runs: s.runs,
            mode: "systemd-socket-activate -l PATH --fdname=player (no --accept)")
    }

    /// `runs` + 1 starts of `mpd --no-daemon`: time from launch until its socket answers
    /// `status` (connect retried every 100 µs). The first start creates the database.
    static func mpd(_ setup: MPDSetup, _ s: Settings) throws -> ColdStartResult {
        var launchSamples: [UInt64] = []
        var first: Double?
        for run in 0...s.runs {
            unlink(setup.socketPath)
            let launched = monotonicNanos()
            let process = try setup.launch()
            defer { ChildProcesses.shared.stop(process) }
            let connection = try MPDConnection(
                path: setup.socketPath, ioTimeout: s.startTimeout,
                connectUntil: deadline(after: s.startTimeout))
            try connection.status()
            let answered = monotonicNanos()
            if run == 0 { first = Double(answered - launched) / 1e6 } else { launchSamples.append(answered - launched) }
        }
        return ColdStartResult(
            firstStartMillis: first, connectToAnswer: nil,
            launchToAnswer: LatencyStats(samples: launchSamples), runs: s.runs,
            mode: "mpd --no-daemon, self-bound socket (no socket activation)")
    }

    /// Polls every 100 µs until `path` exists; fails early if the process died.
    private static func waitForPath(_ path: String, process: Child, seconds: Double) throws {
        let until = deadline(after: seconds)
        var st = stat()
        while lstat(path, &st) != 0 {
            guard process.isRunning else { throw BenchError("\(process.executable) exited before creating \(path)") }
            guard monotonicNanos() < until else { throw BenchError("\(path) did not appear within \(seconds) s") }
            sleepMicros(100)
        }
    }
}
