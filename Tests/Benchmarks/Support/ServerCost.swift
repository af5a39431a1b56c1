import Foundation
import TestSupport

/// What a server process spent on a run of requests, summed over its threads: time on a CPU
/// (`/proc/PID/task/TID/schedstat`, nanoseconds) and context switches (`…/status`). Read
/// before and after a run, the difference per request says whether a latency gap comes from
/// the server's own work or from the hops between threads and processes.
struct ServerCost: Codable, Sendable {
    var cpuMicrosPerRequest: Double
    var switchesPerRequest: Double

    struct Sample {
        var cpuNanos: UInt64
        var switches: UInt64
    }

    static func sample(pid: pid_t) -> Sample {
        var total = Sample(cpuNanos: 0, switches: 0)
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        for task in tasks {
            let dir = "/proc/\(pid)/task/\(task)"
            if let schedstat = try? readProcFile(dir + "/schedstat"),
                let first = schedstat.split(separator: " ").first, let nanos = UInt64(first)
            {
                total.cpuNanos += nanos
            }
            if let status = try? readProcFile(dir + "/status") {
                for line in status.split(separator: "\n") where line.contains("ctxt_switches:") {
                    total.switches += UInt64(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
                }
            }
        }
        return total
    }

    /// Runs `body`, which makes `requests` requests to the process `pid`, and returns its result
    /// with the process's cost per request.
    static func measure<T>(pid: pid_t, requests: Int, _ body: () throws -> T) rethrows -> (T, ServerCost) {
        let before = sample(pid: pid)
        let result = try body()
        let after = sample(pid: pid)
        let n = Double(max(requests, 1))
        return (
            result,
            ServerCost(
                cpuMicrosPerRequest: Double(after.cpuNanos &- before.cpuNanos) / 1000 / n,
                switchesPerRequest: Double(after.switches &- before.switches) / n)
        )
    }

    static func median(_ runs: [ServerCost]) -> ServerCost? {
        guard !runs.isEmpty else { return nil }
        func m(_ values: [Double]) -> Double { values.sorted()[(values.count - 1) / 2] }
        return ServerCost(
            cpuMicrosPerRequest: m(runs.map(\.cpuMicrosPerRequest)),
            switchesPerRequest: m(runs.map(\.switchesPerRequest)))
    }
}
