import Foundation
import Glibc
import Wire

/// One real Cassette executable under test, started either bound to its own socket or
/// behind `systemd-socket-activate`, with its output kept in a log file for failures.
public final class ServiceProcess {
    public enum Launch {
        /// The service binds `<runtime-dir>/<name>.sock` itself.
        case selfBound
        /// `systemd-socket-activate -l <path>` holds the socket; the service is exec'd in its
        /// place on the first connection and serves the inherited fd.
        case socketActivated
        /// Self-bound, started through `taskset -c <cpus>`: the service (and every thread it
        /// makes) runs on those CPUs only, e.g. "0" for a one-core device.
        case pinned(cpus: String)
        /// Self-bound, started as the last argument of `command` (e.g. `strace` and its
        /// options). `pid` and `signal` are the wrapper's: stop the service through the pid its
        /// `service.status` names.
        case wrapped(command: [String])
    }

    public let name: String
    public let dir: TestDirectory
    public let launch: Launch
    public let notify: NotifyListener
    public let logPath: String
    private let process = Process()
    private static let counter = Counter()

    public var pid: Int32 { process.processIdentifier }
    public var socketPath: String { dir.socketPath(name) }

    /// `cores`, when given, pins the service to those CPUs (`taskset -c`), e.g. `"0"` for a one-core device.
    public init(
        _ name: String, in dir: TestDirectory, launch: Launch = .selfBound, extraArgs: [String] = [],
        environment: [String: String] = [:], cores: String? = nil
    ) throws {
        self.name = name
        self.dir = dir
        self.launch = launch
        let n = Self.counter.next()
        notify = try NotifyListener(path: "\(dir.path)/n\(n).sock")
        logPath = "\(dir.path)/\(name)-\(n).log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        var args = ["--runtime-dir", dir.runtimeDir, "--state-dir", dir.stateDir] + extraArgs
        var env = ProcessInfo.processInfo.environment
        env["NOTIFY_SOCKET"] = notify.path
        env["CASSETTE_LOG_LEVEL"] = env["CASSETTE_LOG_LEVEL"] ?? "debug"
        env.removeValue(forKey: "LISTEN_FDS")
        env.removeValue(forKey: "LISTEN_PID")
        env.removeValue(forKey: "LISTEN_FDNAMES")
        env.removeValue(forKey: "JOURNAL_STREAM")
        for (k, v) in environment { env[k] = v }
        switch launch {
        case .selfBound:
            process.executableURL = URL(fileURLWithPath: Binaries.path(name))
        case .pinned(let cpus):
            process.executableURL = URL(fileURLWithPath: "/usr/bin/taskset")
            args = ["-c", cpus, Binaries.path(name)] + args
        case .wrapped(let command):
            process.executableURL = URL(fileURLWithPath: command[0])
            args = Array(command.dropFirst()) + [Binaries.path(name)] + args
        case .socketActivated:
            process.executableURL = URL(fileURLWithPath: "/usr/bin/systemd-socket-activate")
            // systemd-socket-activate hands its children only LISTEN_* and what -E names.
            let passed = ["NOTIFY_SOCKET", "CASSETTE_LOG_LEVEL", "PATH"] + environment.keys.sorted()
            args =
                ["-l", dir.socketPath(name), "--fdname=\(name)"] + passed.flatMap { ["-E", "\($0)=\(env[$0] ?? "")"] }
                + [Binaries.path(name)] + args
        }
        if let cores, let executable = process.executableURL?.path {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/taskset")
            args = ["-c", cores, executable] + args
        }
        process.arguments = args
        process.environment = env
        process.standardOutput = log
        process.standardError = log
        try process.run()
    }

    /// Waits until the service (or, when socket-activated, the activator) listens.
    @discardableResult
    public func waitForSocket(timeout: Double = 20) throws -> Self {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if UnixSocketProbe.status(of: socketPath) == .live { return self }
            guard process.isRunning else { throw HarnessError("\(name) exited early (\(process.terminationStatus)):\n\(log)") }
            usleep(20_000)
        }
        throw HarnessError("\(name) did not listen on \(socketPath) within \(timeout)s:\n\(log)")
    }

    /// Waits for READY=1 on the notify socket (self-bound services send it after listening).
    public func waitReady(timeout: Double = 20) throws {
        guard notify.wait(for: "READY=1", timeout: timeout) else {
            throw HarnessError("\(name) sent no READY=1 within \(timeout)s:\n\(log)")
        }
    }

    public func client() async throws -> RPCClient {
        try await RPCClient.connect(path: socketPath)
    }

    public func raw() throws -> RawSocket { try RawSocket(path: socketPath) }

    public func signal(_ sig: Int32) { kill(process.processIdentifier, sig) }

    public var isRunning: Bool { process.isRunning }

    /// Waits for exit and returns the exit status (or 128+signal when killed by one).
    public func waitExit(timeout: Double = 20) throws -> Int32 {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            guard Date() < deadline else { throw HarnessError("\(name) still running after \(timeout)s:\n\(log)") }
            usleep(10_000)
        }
        return process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
    }

    /// Kills with SIGKILL (if still running) and reaps.
    public func kill9() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        _ = try? waitExit(timeout: 10)
    }

    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    deinit { kill9() }
}

final class Counter: @unchecked Sendable {
    private var value = 0
    private let lock = NSLock()
    func next() -> Int {
        lock.lock()
        defer { lock.unlock() }
        value += 1
        return value
    }
}
