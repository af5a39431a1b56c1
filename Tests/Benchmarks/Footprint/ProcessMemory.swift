import Foundation
import TestSupport

/// One look at a running process: /proc/PID/status, smaps_rollup and maps.
struct ProcessMemory: Codable, Sendable {
    var rssKiB: Int
    var pssKiB: Int
    var anonKiB: Int
    var threads: Int
    var mappedLibraries: Int

    static func read(pid: pid_t) throws -> ProcessMemory {
        func text(_ file: String) throws -> String { try readProcFile("/proc/\(pid)/\(file)") }
        func kib(_ key: String, in s: String) -> Int {
            for line in s.split(separator: "\n") where line.hasPrefix(key + ":") {
                return Int(line.dropFirst(key.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "") ?? 0
            }
            return 0
        }
        let status = try text("status"), rollup = try text("smaps_rollup"), maps = try text("maps")
        var libraries = Set<Substring>()
        for line in maps.split(separator: "\n") {
            guard let slash = line.firstIndex(of: "/") else { continue }
            let path = line[slash...]
            if path.contains(".so") { libraries.insert(path) }
        }
        return ProcessMemory(
            rssKiB: kib("VmRSS", in: status), pssKiB: kib("Pss", in: rollup),
            anonKiB: kib("RssAnon", in: status), threads: kib("Threads", in: status),
            mappedLibraries: libraries.count)
    }
}
