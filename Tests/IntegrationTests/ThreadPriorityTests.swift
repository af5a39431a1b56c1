import Foundation
import Glibc
import TestSupport
import Wire
import XCTest

/// docs/operations.md, "Thread priorities": libdispatch sets the nice value of every worker
/// thread it starts with setpriority(2). The units let that call through and let the service go
/// down to `LimitNICE=` and no further, so every such call must ask for a nice value within that
/// limit (else it fails with EACCES and libdispatch logs a line to the journal for each thread),
/// and no thread may ask for another scheduling policy (sched_setscheduler, sched_setattr,
/// sched_setparam stay denied by the units' filter). Checked by running each daemon, its catalog
/// open, under `strace -f`.
final class ThreadPriorityTests: XCTestCase {
    private static let strace = "/usr/bin/strace"
    private static let calls = ["setpriority", "sched_setscheduler", "sched_setattr", "sched_setparam"]

    func testEveryThreadPriorityTheDaemonsAskForIsWithinTheUnitsLimit() async throws {
        guard FileManager.default.isExecutableFile(atPath: Self.strace) else { throw XCTSkip("strace is not installed") }
        let floor = try Self.unitNiceFloor()
        let dir = try TestDirectory(prefix: "ctp")
        defer { dir.remove() }
        for name in ["downloader", "reporter", "player"] {
            let trace = "\(dir.path)/\(name).strace"
            let command = [Self.strace, "-f", "-qq", "-e", "trace=" + Self.calls.joined(separator: ","), "-o", trace]
            var args: [String] = []
            if name == "player" { args = ["--audio-device", "null", "--audio-pace", "realtime"] }
            let service = try ServiceProcess(name, in: dir, launch: .wrapped(command: command), extraArgs: args)
            var pid: Int32?
            // strace's end does not end the daemon it traces.
            defer {
                if let pid { kill(pid, SIGKILL) }
                service.kill9()
            }
            try service.waitForSocket()
            let client = try await service.client()
            // The catalog's own threads start once it is open.
            try await waitUntil("\(name)'s catalog open\n\(service.log)") {
                let status = try await client.call("service.status", timeout: .seconds(5))
                pid = status["pid"]?.intValue.map(Int32.init)
                return status["health"]?["catalogMs"]?.doubleValue != nil
            }
            await client.close()
            kill(try XCTUnwrap(pid), SIGTERM)
            XCTAssertEqual(try service.waitExit(timeout: 20), 0, service.log)

            let lines = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n")
            let asked = lines.compactMap(Self.niceValue)
            XCTAssertFalse(asked.isEmpty, "\(name): no setpriority call traced:\n\(lines.prefix(20).joined(separator: "\n"))")
            XCTAssertTrue(asked.allSatisfy { $0 >= floor }, "\(name) asked for nice values \(Set(asked).sorted()) below \(floor)")
            let other = lines.filter { line in Self.calls.dropFirst().contains { line.contains($0 + "(") } }
            XCTAssertEqual(other, [], "\(name) asked for another scheduling policy")
            print("\(name): setpriority nice values \(Set(asked).sorted()) (\(asked.count) calls), unit floor \(floor)")
        }
    }

    /// The nice value of one traced `setpriority(PRIO_PROCESS, 0, -4) = 0` (possibly split by
    /// strace into `<unfinished ...>`).
    private static func niceValue(_ line: Substring) -> Int? {
        guard let call = line.range(of: "setpriority(") else { return nil }
        let arguments = line[call.upperBound...].prefix { $0 != ")" && $0 != "<" }
        return arguments.split(separator: ",").last.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    }

    /// The lowest nice value the units allow (`LimitNICE=`), the same in all three.
    private static func unitNiceFloor() throws -> Int {
        let units = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("deploy/systemd")
        let floors = try ["downloader", "player", "reporter"].map { service -> Int in
            let text = try String(contentsOf: units.appendingPathComponent("cassette-\(service).service"), encoding: .utf8)
            let line = text.split(separator: "\n").first { $0.hasPrefix("LimitNICE=") }
            return try XCTUnwrap(line.flatMap { Int($0.dropFirst("LimitNICE=".count)) }, "cassette-\(service).service has no LimitNICE=")
        }
        XCTAssertEqual(Set(floors).count, 1, "the units differ: \(floors)")
        return floors[0]
    }
}
