import Foundation
import Glibc

/// A short-lived folder under /tmp with `run/` (sockets) and `state/` (catalog). Paths are
/// kept short because a Unix socket path must fit in 108 bytes.
public final class TestDirectory {
    public let path: String
    public var runtimeDir: String { path + "/run" }
    public var stateDir: String { path + "/state" }

    public init(prefix: String = "cst") throws {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw HarnessError("mkdtemp failed: errno \(errno)")
        }
        path = String(cString: made)
        try FileManager.default.createDirectory(atPath: runtimeDir, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: stateDir, withIntermediateDirectories: true)
    }

    public func socketPath(_ service: String) -> String { "\(runtimeDir)/\(service).sock" }

    /// Writes a JSON config file and returns its path.
    public func writeConfig(_ json: String, name: String = "cassette.json") throws -> String {
        let file = "\(path)/\(name)"
        try json.write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    public func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Where the built executables are: `CASSETTE_BIN_DIR`, else next to the test bundle
/// (`swift test` runs `.build/<triple>/debug/CassettePackageTests.xctest`).
public enum Binaries {
    public static var directory: String {
        if let dir = ProcessInfo.processInfo.environment["CASSETTE_BIN_DIR"] { return dir }
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path,
            URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? "/")
                .deletingLastPathComponent().path,
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0 + "/player") } ?? candidates[0]
    }

    public static func path(_ name: String) -> String { directory + "/" + name }
}
