import Foundation
import Glibc
import TestSupport
import XCTest

/// What a service tells its manager besides READY=1 and what it shows about itself: the
/// `STATUS=` line `systemctl status` prints, `--version`, and the group of its socket.
final class ServiceManagerStatusTests: XCTestCase {
    var dir: TestDirectory!

    override func setUpWithError() throws { dir = try TestDirectory() }
    override func tearDown() { dir?.remove() }

    func testEachServiceKeepsAStatusLineForTheManager() throws {
        let expected = ["downloader": "STATUS=idle", "player": "STATUS=stopped", "reporter": "STATUS=no origin, 0 queued"]
        for (name, line) in expected.sorted(by: { $0.key < $1.key }) {
            let service = try ServiceProcess(name, in: dir)
            defer { service.kill9() }
            try service.waitReady()
            XCTAssertTrue(service.notify.wait(for: line, timeout: 10), "\(name): \(service.notify.messages)\n\(service.log)")
        }
    }

    func testEveryDaemonPrintsItsVersion() throws {
        for name in ["downloader", "player", "reporter", "cassettectl"] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Binaries.path(name))
            process.arguments = ["--version"]
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            XCTAssertEqual(process.terminationStatus, 0, name)
            XCTAssertTrue(output.range(of: #"^\d+\.\d+\.\d+"#, options: .regularExpression) != nil, "\(name): \(output)")
        }
    }

    /// Apps connect through the socket group (cassette-clients on a device); the socket is
    /// 0660 in that group whatever the umask.
    func testASelfBoundSocketIsInTheSocketGroup() throws {
        try XCTSkipUnless(getuid() == 0, "only root may hand its socket to a group it is not in")
        let audio = try XCTUnwrap(getgrnam("audio")?.pointee.gr_gid, "this test needs the audio group")
        let service = try ServiceProcess("reporter", in: dir, extraArgs: ["--socket-group", "audio"])
        defer { service.kill9() }
        try service.waitReady()
        var info = stat()
        XCTAssertEqual(stat(service.socketPath, &info), 0)
        XCTAssertEqual(info.st_gid, audio)
        XCTAssertEqual(info.st_mode & 0o777, 0o660)
    }

    /// A socket it cannot bind (here in /proc, which refuses even root) ends the service at
    /// once with 71 and the reason, rather than leaving it waiting for a READY that never comes.
    func testAServiceThatCannotBindItsSocketExits71AtOnce() throws {
        let service = try ServiceProcess("reporter", in: dir, extraArgs: ["--runtime-dir", "/proc/self"])
        XCTAssertEqual(try service.waitExit(timeout: 5), 71, service.log)
        XCTAssertTrue(service.log.contains("Cannot listen on"), service.log)
    }

    func testANamedSocketGroupThatDoesNotExistStopsTheServiceWith78() throws {
        let service = try ServiceProcess("reporter", in: dir, extraArgs: ["--socket-group", "no-such-group-\(getpid())"])
        XCTAssertEqual(try service.waitExit(timeout: 10), 78, service.log)
    }
}
