import Foundation
import TestSupport
import XCTest

/// The shipped units in deploy/systemd pass `systemd-analyze verify` and score an exposure of 2.0
/// or less in `systemd-analyze security --offline=true`. Both run on the unit files
/// alone; no systemd manager is started.
final class SystemdUnitTests: XCTestCase {
    private static let services = ["downloader", "player", "reporter"]
    private let unitsDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("deploy/systemd")

    /// Copies of the units whose ExecStart points at the built binaries, because `verify`
    /// checks that the command exists and this machine has no /usr/libexec/cassette.
    private func unitsForThisMachine() throws -> TestDirectory {
        let dir = try TestDirectory(prefix: "units")
        for name in try FileManager.default.contentsOfDirectory(atPath: unitsDirectory.path)
        where name.hasSuffix(".service") || name.hasSuffix(".socket") {
            let text = try String(contentsOf: unitsDirectory.appendingPathComponent(name), encoding: .utf8)
                .replacingOccurrences(of: "/usr/libexec/cassette/", with: Binaries.directory + "/")
            try text.write(toFile: "\(dir.path)/\(name)", atomically: true, encoding: .utf8)
        }
        return dir
    }

    func testUnitsPassSystemdAnalyzeVerify() throws {
        let dir = try unitsForThisMachine()
        defer { dir.remove() }
        let units = Self.services.flatMap { ["\(dir.path)/cassette-\($0).service", "\(dir.path)/cassette-\($0).socket"] }
        let result = try Command.run("/usr/bin/systemd-analyze", ["verify", "--man=no"] + units)
        XCTAssertEqual(result.status, 0, result.output)
        XCTAssertEqual(result.output.trimmingCharacters(in: .whitespacesAndNewlines), "", "verify printed warnings")
    }

    func testEveryServiceIsExposedAtMostTwoPointZero() throws {
        let dir = try unitsForThisMachine()
        defer { dir.remove() }
        for service in Self.services {
            let result = try Command.run(
                "/usr/bin/systemd-analyze",
                [
                    "security", "--offline=true", "--no-pager",
                    "\(dir.path)/cassette-\(service).service",
                ])
            let line = result.output.split(separator: "\n").first { $0.contains("Overall exposure level") } ?? ""
            let score = line.split(separator: ":").last.flatMap { Double($0.split(separator: " ").first ?? "") }
            XCTAssertNotNil(score, "no exposure line for \(service): \(result.output.suffix(300))")
            XCTAssertLessThanOrEqual(score ?? 10, 2.0, "\(service): \(line)")
        }
    }

    func testSocketsAreTheContractPathsAndNoServiceOwnsTheRuntimeDirectory() throws {
        for service in Self.services {
            let socket = try String(contentsOf: unitsDirectory.appendingPathComponent("cassette-\(service).socket"), encoding: .utf8)
            XCTAssertTrue(socket.contains("ListenStream=/run/cassette/\(service).sock"), service)
            XCTAssertTrue(socket.contains("SocketMode=0660"), service)
            XCTAssertTrue(socket.contains("FileDescriptorName=\(service)"), service)
            let unit = try String(contentsOf: unitsDirectory.appendingPathComponent("cassette-\(service).service"), encoding: .utf8)
            // A RuntimeDirectory= would be deleted on stop, taking the sockets with it (a mistake MPD's units made).
            XCTAssertFalse(unit.contains("RuntimeDirectory="), service)
            XCTAssertTrue(unit.contains("Type=notify"), service)
            XCTAssertTrue(unit.contains("WatchdogSec="), service)
        }
    }

    /// libdispatch sets each worker thread's nice value with setpriority(2): systemd's own reading
    /// of the filter lets that call through although the rest of @resources stays denied, and
    /// `LimitNICE=` lets the service go down to the nice value libdispatch's manager thread asks
    /// for (ThreadPriorityTests checks what the daemons ask for against it).
    func testServicesLetLibdispatchSetThreadPriorities() throws {
        let dir = try unitsForThisMachine()
        defer { dir.remove() }
        for service in Self.services {
            let result = try Command.run(
                "/usr/bin/systemd-analyze",
                [
                    "security", "--offline=true", "--no-pager",
                    "\(dir.path)/cassette-\(service).service",
                ])
            let line = result.output.split(separator: "\n").first { $0.contains("SystemCallFilter=~@resources") } ?? ""
            XCTAssertTrue(line.contains("setpriority is allowed"), "\(service): \(line)")
            let unit = try String(contentsOf: unitsDirectory.appendingPathComponent("cassette-\(service).service"), encoding: .utf8)
            XCTAssertTrue(unit.split(separator: "\n").contains("LimitNICE=-4"), service)
            for denied in ["@privileged", "@mount", "@obsolete"] {
                let named = result.output.split(separator: "\n").first { $0.contains("SystemCallFilter=~\(denied)") } ?? ""
                XCTAssertTrue(named.hasPrefix("✓"), "\(service): \(named)")
            }
        }
    }

    /// One descriptor per client connection: the default soft limit (1024) runs out near
    /// 1000 clients.
    func testServicesRaiseTheirDescriptorLimit() throws {
        for service in Self.services {
            let unit = try String(contentsOf: unitsDirectory.appendingPathComponent("cassette-\(service).service"), encoding: .utf8)
            let limit = unit.split(separator: "\n").first { $0.hasPrefix("LimitNOFILE=") }
                .flatMap { Int($0.dropFirst("LimitNOFILE=".count)) }
            XCTAssertGreaterThanOrEqual(limit ?? 0, 4096, "\(service): LimitNOFILE")
        }
    }
}
