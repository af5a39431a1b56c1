import Foundation
import Glibc
import TestSupport
import XCTest

/// A tmpfs of a few hundred KiB mounted over a folder (root only), which a test fills to the
/// last byte — SQLite writes there then fail with SQLITE_FULL — and frees again.
final class SmallDisk {
    let path: String
    private var filler: String { path + "/filler" }
    private var mounted = false

    init(at path: String, kilobytes: Int) throws {
        guard getuid() == 0 else { throw XCTSkip("mounting a tmpfs needs root") }
        self.path = path
        try Self.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(kilobytes)k", "tmpfs", path])
        mounted = true
    }

    deinit { unmount() }

    /// Writes a filler file until the disk has not one byte left.
    func fill() throws {
        let fd = open(filler, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        guard fd >= 0 else { throw HarnessError("cannot create \(filler): errno \(errno)") }
        defer { close(fd) }
        for chunk in [65_536, 4096, 1] {
            let bytes = [UInt8](repeating: 0, count: chunk)
            while true {
                if write(fd, bytes, chunk) > 0 { continue }
                guard errno == ENOSPC else { throw HarnessError("filling \(path): errno \(errno)") }
                break
            }
        }
    }

    /// Deletes the filler: the space is back.
    func free() throws {
        try FileManager.default.removeItem(atPath: filler)
    }

    /// Unmounts (lazily when something still holds a file open there).
    func unmount() {
        guard mounted else { return }
        mounted = false
        if (try? Self.run("/bin/umount", [path])) == nil { try? Self.run("/bin/umount", ["-l", path]) }
    }

    private static func run(_ tool: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw HarnessError("\(tool) \(arguments.joined(separator: " ")) exited \(process.terminationStatus)")
        }
    }
}
