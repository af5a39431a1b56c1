import Foundation
import Glibc
import Wire

/// Plays systemd's part in per-service restart tests without starting a systemd manager: it
/// binds and holds the listening socket (so connections queue in its backlog while the service
/// is down, as with a `.socket` unit) and (re)starts the service with that socket as fd 3 and
/// `LISTEN_FDS`, `LISTEN_PID`, `LISTEN_FDNAMES` set exactly as systemd sets them.
///
/// Foundation's `Process` closes every descriptor above 2 in the child, so this spawns with
/// `posix_spawn` and a `dup2` file action. `LISTEN_PID` must be the service's own pid, which is
/// only known in the child: a `/bin/sh` wrapper exports its `$$` and then `exec`s the service,
/// keeping that pid.
public final class SocketSupervisor {
    public let name: String
    public let dir: TestDirectory
    public let listenFD: Int32
    public private(set) var pid: pid_t = 0
    public private(set) var starts = 0
    private let environment: [String: String]
    private let extraArgs: [String]

    public var socketPath: String { dir.socketPath(name) }
    public var logPath: String { "\(dir.path)/\(name)-supervised.log" }

    public init(_ name: String, in dir: TestDirectory, extraArgs: [String] = [], environment: [String: String] = [:]) throws {
        self.name = name
        self.dir = dir
        self.extraArgs = extraArgs
        self.environment = environment
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket() failed: errno \(errno)") }
        unlink(dir.socketPath(name))
        let bound = UnixSocketAddress.withSockaddr(dir.socketPath(name)) { bind(fd, $0, $1) } ?? -1
        guard bound == 0, listen(fd, 512) == 0 else {
            let e = errno
            Glibc.close(fd)
            throw HarnessError("bind/listen \(dir.socketPath(name)) failed: errno \(e)")
        }
        chmod(dir.socketPath(name), 0o660)
        listenFD = fd
    }

    deinit {
        kill9()
        Glibc.close(listenFD)
    }

    /// Starts the service on the held socket; returns a listener for its sd_notify messages.
    @discardableResult
    public func start() throws -> NotifyListener {
        starts += 1
        let notify = try NotifyListener(path: "\(dir.path)/sv\(starts).sock")
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("LISTEN_") }
        env["NOTIFY_SOCKET"] = notify.path
        env["LISTEN_FDS"] = "1"
        env["LISTEN_FDNAMES"] = name
        env["CASSETTE_LOG_LEVEL"] = env["CASSETTE_LOG_LEVEL"] ?? "debug"
        for (key, value) in environment { env[key] = value }
        let args =
            [
                "/bin/sh", "-c", "export LISTEN_PID=$$; exec \"$0\" \"$@\"", Binaries.path(name),
                "--runtime-dir", dir.runtimeDir, "--state-dir", dir.stateDir,
            ] + extraArgs

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, listenFD, 3) // dup2 clears FD_CLOEXEC on fd 3
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = args.map { strdup($0) } + [nil]
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var child: pid_t = 0
        let rc = posix_spawn(&child, "/bin/sh", &actions, nil, argv, envp)
        guard rc == 0 else { throw HarnessError("posix_spawn failed: \(rc)") }
        pid = child
        return notify
    }

    /// SIGKILL and reap; the listening socket stays open and keeps queueing connections.
    public func kill9() {
        guard pid > 0 else { return }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        pid = 0
    }

    /// SIGTERM, wait, and return the exit status (128 + signal when killed by one).
    public func stop(timeout: Double = 20) throws -> Int32 {
        guard pid > 0 else { return 0 }
        kill(pid, SIGTERM)
        let deadline = Date().addingTimeInterval(timeout)
        var status: Int32 = 0
        while waitpid(pid, &status, WNOHANG) == 0 {
            guard Date() < deadline else { throw HarnessError("\(name) ignored SIGTERM for \(timeout)s") }
            usleep(10_000)
        }
        pid = 0
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
}
