import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The cores a peer's processes may run on, to measure a one-core device on a larger machine:
/// `taskset -c CORES` before the command. taskset execs the command, so the pid the bench waits
/// for, its exit status and its `rusage` are the command's own.
struct CPUPin: Sendable {
    /// A `taskset` core list ("0"); nil: no pinning.
    var cores: String?

    static let none = CPUPin(cores: nil)
    /// The first core alone: a one-core device.
    static let firstCore = CPUPin(cores: "0")

    static let taskset = "/usr/bin/taskset"

    /// The command line that runs `executable` on these cores.
    func command(_ executable: String, _ arguments: [String]) -> (executable: String, arguments: [String]) {
        guard let cores else { return (executable, arguments) }
        return (Self.taskset, ["-c", cores, executable] + arguments)
    }

    /// The cores other than the first ("1-3"), nil on a machine of one core: where the servers
    /// go while the peers have the first core to themselves.
    static var otherCores: String? {
        let count = sysconf(Int32(_SC_NPROCESSORS_ONLN))
        return count > 1 ? "1-\(count - 1)" : nil
    }

    /// Every online core ("0-3").
    static var allCores: String { "0-\(max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN))) - 1)" }

    /// Moves running processes onto `cores`: every thread of each, and of their children
    /// (nginx's workers), with `taskset -a -p`.
    static func move(_ pids: [pid_t], to cores: String, log: String) throws {
        for pid in pids.flatMap(tree) {
            _ = try DownloadPeers.timed(taskset, ["-a", "-p", "-c", cores, "\(pid)"], log: log)
        }
    }

    /// A process and its live descendants, from /proc.
    private static func tree(_ pid: pid_t) -> [pid_t] {
        var found = [pid]
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        for task in tasks {
            guard let children = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/children", encoding: .utf8) else { continue }
            for child in children.split(separator: " ").compactMap({ pid_t($0) }) { found += tree(child) }
        }
        return found
    }
}
