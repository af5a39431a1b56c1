import Foundation

/// What the figures were measured on.
struct MachineFacts: Codable, Sendable {
    var nproc: Int
    var cpuModel: String
    var kernel: String
    var os: String
    var memoryTotal: String
    /// How the benchmark itself was compiled (`#if DEBUG`).
    var benchBuild: String
    /// How the Cassette binaries were compiled, from the last `debug`/`release` part of --bin-dir.
    var cassetteBuild: String
    var cassetteVersion: String?
    var mpdVersion: String?
    var mpdProtocolVersion: String?

    static func collect(binDir: String) -> MachineFacts {
        #if DEBUG
            let bench = "debug"
        #else
            let bench = "release"
        #endif
        let parts = URL(fileURLWithPath: binDir).standardizedFileURL.pathComponents
        let cassette = parts.last(where: { $0 == "release" || $0 == "debug" }) ?? "unknown (\(binDir))"
        var name = utsname()
        uname(&name)
        let release = withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        let machine = withUnsafeBytes(of: &name.machine) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        return MachineFacts(
            nproc: Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))),
            cpuModel: field("model name", in: "/proc/cpuinfo") ?? "unknown",
            kernel: "\(release) \(machine)",
            os: field("PRETTY_NAME", in: "/etc/os-release", separator: "=")?.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) ?? "unknown",
            memoryTotal: field("MemTotal", in: "/proc/meminfo") ?? "unknown",
            benchBuild: bench, cassetteBuild: cassette)
    }

    /// The value of the first `key<sep>value` line of a small text file.
    private static func field(_ key: String, in path: String, separator: Character = ":") -> String? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") {
            let pair = line.split(separator: separator, maxSplits: 1)
            if pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces) == key {
                return pair[1].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }
}

/// First line of `mpd --version`, bounded to 10 s.
func mpdVersionLine(_ mpd: String, logFile: String) -> String? {
    guard let process = try? ChildProcesses.shared.launch(mpd, ["--version"], logFile: logFile) else { return nil }
    if !ChildProcesses.shared.waitForExit(process, seconds: 10) { ChildProcesses.shared.stop(process, grace: 1) }
    ChildProcesses.shared.stop(process)
    let text = (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
    return text.split(separator: "\n").first.map(String.init)
}
