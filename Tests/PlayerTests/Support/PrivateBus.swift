import Foundation
import TestSupport
import XCTest

/// A private D-Bus daemon (`dbus-daemon --session`) listening on a socket in a test folder,
/// and the real `playerctl` pointed at it, for the player's MPRIS tests.
final class PrivateBus {
    let process = Process()
    /// The address the daemon printed once it listened, e.g. `unix:path=/tmp/…/bus,guid=…`.
    let address: String

    /// Starts the daemon on `socket` and returns once it printed its address (it listens by then).
    init(socket: String) throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-daemon") else {
            throw XCTSkip("dbus-daemon is not installed (make deps)")
        }
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        process.arguments = ["--session", "--print-address", "--nofork", "--address=unix:path=\(socket)"]
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        try process.run()
        var printed = Data()
        while !printed.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { throw HarnessError("dbus-daemon exited before printing its address") }
            printed += chunk
        }
        address = String(decoding: printed, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    deinit { stop() }

    /// SIGKILL: a child started from a test thread inherits its blocked signals, SIGTERM included.
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// `playerctl <arguments>` on this bus: its exit status and what it printed (trimmed).
    func playerctl(_ arguments: [String]) throws -> (status: Int32, output: String) {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/playerctl") else {
            throw XCTSkip("playerctl is not installed (make deps)")
        }
        let tool = Process()
        let output = Pipe()
        tool.executableURL = URL(fileURLWithPath: "/usr/bin/playerctl")
        tool.arguments = arguments
        tool.environment = ["DBUS_SESSION_BUS_ADDRESS": address, "PATH": "/usr/bin:/bin"]
        tool.standardOutput = output
        tool.standardError = output
        try tool.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        tool.waitUntilExit()
        return (tool.terminationStatus, String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// `playerctl -p cassette <arguments>`'s output; fails the test when playerctl does.
    func cassette(_ arguments: String...) throws -> String {
        let (status, output) = try playerctl(["-p", "cassette"] + arguments)
        guard status == 0 else { throw HarnessError("playerctl -p cassette \(arguments.joined(separator: " ")) exited \(status): \(output)") }
        return output
    }

    /// Starts `playerctl -p cassette --follow <arguments>`, writing what it prints to `file`
    /// (each line a property change it was signalled). End it with `end(_:)`.
    func follow(_ arguments: [String], into file: String) throws -> Process {
        _ = FileManager.default.createFile(atPath: file, contents: nil)
        let tool = Process()
        tool.executableURL = URL(fileURLWithPath: "/usr/bin/playerctl")
        tool.arguments = ["-p", "cassette", "--follow"] + arguments
        tool.environment = ["DBUS_SESSION_BUS_ADDRESS": address, "PATH": "/usr/bin:/bin"]
        tool.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: file))
        try tool.run()
        return tool
    }

    func end(_ tool: Process) {
        kill(tool.processIdentifier, SIGKILL)
        tool.waitUntilExit()
    }
}
