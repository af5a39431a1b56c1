import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A process the benchmark started (with `posix_spawn`, not Foundation's `Process`: the
/// thread that spawns may block signals, and a child must not inherit that mask, or
/// `systemd-socket-activate` would never see our SIGTERM).
final class Child: @unchecked Sendable {
    let pid: pid_t
    let executable: String
    private let lock = NSLock()
    private var exited = false

    init(pid: pid_t, executable: String) {
        self.pid = pid
        self.executable = executable
    }

    /// Reaps the child if it has exited (`waitpid` WNOHANG).
    var isRunning: Bool {
        lock.withLock {
            if exited { return false }
            var status: Int32 = 0
            let rc = waitpid(pid, &status, WNOHANG)
            if rc == pid || (rc < 0 && errno == ECHILD) { exited = true }
            return !exited
        }
    }
}

/// Every process the benchmark starts, so that all of them are stopped at the end: on a
/// normal exit, on a thrown error, and on SIGINT/SIGTERM/SIGHUP to the benchmark.
final class ChildProcesses: @unchecked Sendable {
    static let shared = ChildProcesses()

    private let lock = NSLock()
    private var running: [pid_t: Child] = [:]
    private var signalSources: [DispatchSourceSignal] = []
    private var hardKills = 0
    private var shuttingDown = false

    /// Set once a signal asked the benchmark to stop.
    var isShuttingDown: Bool { lock.withLock { shuttingDown } }

    /// How many children had to be killed with SIGKILL.
    var forcedKills: Int { lock.withLock { hardKills } }

    /// Starts `executable` in its own process group, with default signal handling and an
    /// empty signal mask, stdin from /dev/null and stdout/stderr appended to `logFile` (never
    /// a pipe: an unread pipe would block the child). The environment is ours minus the
    /// systemd variables, so a child never mistakes our context for socket activation.
    func launch(_ executable: String, _ arguments: [String], logFile: String) throws -> Child {
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw BenchError("\(executable) is missing or not executable")
        }
        let environment = ProcessInfo.processInfo.environment
            .filter { key, _ in !["LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"].contains(key) }
            .map { "\($0.key)=\($0.value)" }
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawnattr_init(&attributes)
        defer {
            posix_spawn_file_actions_destroy(&actions)
            posix_spawnattr_destroy(&attributes)
        }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logFile, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var empty = sigset_t(), defaults = sigset_t()
        sigemptyset(&empty)
        sigemptyset(&defaults)
        for sig in 1..<32 where sig != SIGKILL && sig != SIGSTOP { sigaddset(&defaults, Int32(sig)) }
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        return try lock.withLock {
            guard !shuttingDown else { throw BenchError("stopping: not starting \(executable)") }
            var pid: pid_t = 0
            let rc = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
            guard rc == 0 else { throw BenchError.system("posix_spawn \(executable)", rc) }
            let child = Child(pid: pid, executable: executable)
            running[pid] = child
            return child
        }
    }

    /// SIGTERM to the child's process group, then SIGKILL after `grace` seconds; waits
    /// (bounded) until the child is gone. Returns false when it had to be killed.
    @discardableResult
    func stop(_ child: Child, grace: Double = 5) -> Bool {
        defer { _ = lock.withLock { running.removeValue(forKey: child.pid) } }
        guard child.isRunning else { return true }
        kill(-child.pid, SIGTERM)
        if waitForExit(child, seconds: grace) { return true }
        kill(-child.pid, SIGKILL)
        lock.withLock { hardKills += 1 }
        _ = waitForExit(child, seconds: 5)
        return false
    }

    func stopAll(grace: Double = 5) {
        let all = lock.withLock { Array(running.values) }
        for child in all where child.isRunning { kill(-child.pid, SIGTERM) }
        for child in all { stop(child, grace: grace) }
    }

    /// Polls every 2 ms, at most `seconds`.
    func waitForExit(_ child: Child, seconds: Double) -> Bool {
        let until = deadline(after: seconds)
        while child.isRunning {
            if monotonicNanos() >= until { return false }
            sleepMicros(2_000)
        }
        return true
    }

    /// On SIGINT/SIGTERM/SIGHUP: refuse new children, stop every child, run `cleanUp`, exit 130.
    func installSignalHandlers(cleanUp: @escaping @Sendable () -> Void) {
        signal(SIGPIPE, SIG_IGN)
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { [self] in
                FileHandle.standardError.write(Data("cassette-bench: signal \(sig), stopping children\n".utf8))
                lock.withLock { shuttingDown = true }
                stopAll(grace: 2)
                cleanUp()
                exit(130)
            }
            source.resume()
            lock.withLock { signalSources.append(source) }
        }
    }
}
