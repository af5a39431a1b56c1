import Foundation

struct LinkedLibraries: Codable, Sendable {
    var names: [String]

    static func ldd(_ binary: String, logFile: String) throws -> LinkedLibraries {
        let child = try ChildProcesses.shared.launch("/usr/bin/ldd", [binary], logFile: logFile)
        guard ChildProcesses.shared.waitForExit(child, seconds: 30) else {
            ChildProcesses.shared.stop(child)
            throw BenchError("ldd \(binary) did not finish")
        }
        let text = (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
        let names = text.split(separator: "\n").compactMap { line -> String? in
            let name = line.trimmingCharacters(in: .whitespaces).split(separator: " ").first.map(String.init) ?? ""
            return name.isEmpty || name.hasPrefix("linux-vdso") || !name.contains(".so") ? nil : name
        }
        return LinkedLibraries(names: names)
    }

    /// The C libraries Cassette wraps, by the name part the loader shows (FFmpeg's are opened
    /// on first use, so they show under "mapped" once the player decodes).
    static let wrapped = ["libcurl", "libsystemd", "libasound", "libavformat", "libavcodec", "libsqlite3"]

    var wrappedPresent: [String] {
        Self.wrapped.filter { lib in names.contains { $0.hasPrefix(lib + ".so") } }
    }
}
