import Foundation
import Glibc
import TestSupport
import Wire
import XCTest

/// A real service that runs out of file descriptors: it stops accepting without spinning,
/// says so once in its log, and serves new clients again once others leave. The limit is
/// lowered with `prlimit --pid` once the service is ready, so start-up itself is unaffected.
final class DescriptorExhaustionTests: XCTestCase {
    /// The warning the server logs when accept fails for want of descriptors.
    static let warning = "out of file descriptors"
    static let descriptorLimit = 128
    static let clients = 300

    var dir: TestDirectory!

    override func setUpWithError() throws { dir = try TestDirectory() }
    override func tearDown() { dir?.remove() }

    func testOutOfDescriptorsBacksOffLogsOnceAndRecovers() throws {
        let service = try ServiceProcess("reporter", in: dir)
        defer { service.kill9() }
        var clients = try saturate(service)
        defer { clients.forEach { _ = Glibc.close($0) } }
        try waitUntil(timeout: 20, "\(service.log)") {
            openDescriptors(of: service.pid) >= Self.descriptorLimit - 2 || warnings(in: service.log) >= 1
        }
        usleep(300_000)

        // Saturated: connections wait in the backlog, and the service must idle meanwhile.
        let cpuBefore = try cpuSeconds(of: service.pid)
        let wallBefore = Date()
        usleep(2_000_000)
        let cpu = try cpuSeconds(of: service.pid) - cpuBefore
        let wall = Date().timeIntervalSince(wallBefore)
        XCTAssertLessThan(cpu / wall, 0.5, "the service used \(cpu) s of CPU in \(wall) s while out of descriptors")
        XCTAssertTrue(service.isRunning)
        XCTAssertEqual(warnings(in: service.log), 1, "while saturated")
        XCTAssertTrue(service.log.contains("limit=\(Self.descriptorLimit)"), "the warning names the limit")

        clients.forEach { _ = Glibc.close($0) }
        clients = []
        let answer = try statusAnswer(service, timeout: 30)
        XCTAssertEqual(answer?["id"], 1)
        XCTAssertEqual(answer?["result"]?["service"], "reporter")
        XCTAssertEqual(warnings(in: service.log), 1, service.log)
        XCTAssertTrue(service.log.contains("accepting connections again"), service.log)
    }

    /// The downloader out of descriptors cannot read its route table either: that must not
    /// read as "no network" (which would stop every download), so the network state stays
    /// what it was, the blindness is said once, and nothing is published as a change.
    func testDownloaderOutOfDescriptorsKeepsItsNetworkState() throws {
        let service = try ServiceProcess("downloader", in: dir)
        defer { service.kill9() }
        var clients = try saturate(service)
        defer { clients.forEach { _ = Glibc.close($0) } }
        try waitUntil(timeout: 20, "\(service.log)") { warnings(in: service.log) >= 1 }
        // The monitor polls every second; its next round finds no descriptor to open /proc with.
        try waitUntil(timeout: 10, "\(service.log)") { service.log.contains("network state unknown") }
        clients.forEach { _ = Glibc.close($0) }
        clients = []
        try waitUntil(timeout: 10, "\(service.log)") { service.log.contains("network state readable again") }
        let answer = try statusAnswer(service, timeout: 30)
        XCTAssertEqual(answer?["result"]?["service"], "downloader")
        XCTAssertFalse(service.log.contains("network changed"), "running out of descriptors was taken for a network change:\n\(service.log)")
        XCTAssertEqual(service.log.components(separatedBy: "network state unknown").count - 1, 1, "said once:\n\(service.log)")
    }

    /// Waits for `service`, lowers its descriptor limit and connects `clients` clients to it.
    func saturate(_ service: ServiceProcess) throws -> [Int32] {
        try service.waitReady()
        if service.name == "downloader" {
            // Its network monitor reads the network state once its core is up (after the
            // catalog opened): saturating before that would make the first reading fail.
            try waitUntil(timeout: 20, "\(service.log)") {
                (try? statusAnswer(service, timeout: 5))??["result"]?["network"] != nil
            }
        }
        try lowerDescriptorLimit(of: service.pid, to: Self.descriptorLimit)
        var clients: [Int32] = []
        do {
            for _ in 0..<Self.clients { clients.append(try connectNonBlocking(service.socketPath)) }
        } catch {
            clients.forEach { _ = Glibc.close($0) }
            throw error
        }
        return clients
    }

    func warnings(in log: String) -> Int {
        log.split(separator: "\n").filter { $0.contains(" warning ") && $0.contains(Self.warning) }.count
    }

    /// A fresh client's `service.status` answer, retried while the service is still busy
    /// accepting the closed backlog.
    func statusAnswer(_ service: ServiceProcess, timeout: Double) throws -> JSONValue? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            do {
                let conn = try service.raw()
                try conn.send(RawSocket.request(id: 1, method: "service.status"))
                if let answer = try conn.readFrame(timeout: max(1, deadline.timeIntervalSinceNow)) { return answer }
            } catch  where Date() < deadline {
                usleep(100_000)
                continue
            }
            if Date() >= deadline { return nil }
        }
    }

    func openDescriptors(of pid: Int32) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
    }

    func lowerDescriptorLimit(of pid: Int32, to limit: Int) throws {
        let prlimit = Process()
        prlimit.executableURL = URL(fileURLWithPath: "/usr/bin/prlimit")
        prlimit.arguments = ["--pid", "\(pid)", "--nofile=\(limit):\(limit)"]
        try prlimit.run()
        prlimit.waitUntilExit()
        XCTAssertEqual(prlimit.terminationStatus, 0, "prlimit failed")
    }

    /// Connects without blocking. A full backlog (`EAGAIN`) is retried for a while, since
    /// the service may still be accepting; it fails the test rather than hanging it.
    func connectNonBlocking(_ path: String, timeout: Double = 10) throws -> Int32 {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else { throw HarnessError("socket() failed: errno \(errno)") }
            let rc = UnixSocketAddress.withSockaddr(path) { connect(fd, $0, $1) } ?? -1
            if rc == 0 { return fd }
            let e = errno
            Glibc.close(fd)
            guard e == EAGAIN, Date() < deadline else { throw HarnessError("connect(\(path)) failed: errno \(e)") }
            usleep(10_000)
        }
    }

    /// User plus system CPU time of a process, all threads, from /proc/<pid>/stat.
    func cpuSeconds(of pid: Int32) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // Fields after the parenthesised command name: state is the first, utime the 12th.
        guard let close = stat.lastIndex(of: ")") else { throw HarnessError("unreadable stat: \(stat)") }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let utime = Double(fields[11]), let stime = Double(fields[12]) else {
            throw HarnessError("unreadable stat: \(stat)")
        }
        return (utime + stime) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    func waitUntil(timeout: Double, _ message: @autoclosure () -> String, _ condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            guard Date() < deadline else { throw HarnessError("condition not met within \(timeout)s: \(message())") }
            usleep(50_000)
        }
    }
}
