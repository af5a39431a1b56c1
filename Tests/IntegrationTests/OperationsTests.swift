import Foundation
import TestSupport
import Wire
import XCTest

/// The watchdog and the CLI against the real binaries.
final class OperationsTests: XCTestCase {
    var dir: TestDirectory!

    override func setUpWithError() throws { dir = try TestDirectory() }
    override func tearDown() { dir?.remove() }

    func testWatchdogPingsWhenTheManagerAsksForIt() throws {
        let service = try ServiceProcess("player", in: dir, environment: ["WATCHDOG_USEC": "400000"])
        defer { service.kill9() }
        try service.waitReady()
        XCTAssertTrue(service.notify.wait(for: "WATCHDOG=1", timeout: 5), service.log)
        // The manager hears READY=1 before any ping.
        let first = service.notify.messages.firstIndex { $0.split(separator: "\n").contains("READY=1") }
        let ping = service.notify.messages.firstIndex { $0.split(separator: "\n").contains("WATCHDOG=1") }
        XCTAssertNotNil(first)
        XCTAssertLessThan(first ?? .max, ping ?? -1, "\(service.notify.messages)")
    }

    func testLongWatchdogIntervalDoesNotDelayShutdown() throws {
        let service = try ServiceProcess("reporter", in: dir, environment: ["WATCHDOG_USEC": "20000000"])
        try service.waitReady()
        XCTAssertTrue(service.notify.wait(for: "WATCHDOG=1", timeout: 5))
        let sent = Date()
        service.signal(SIGTERM)
        XCTAssertEqual(try service.waitExit(timeout: 8), 0, service.log)
        // The next ping would be 10 s away; shutdown must not wait for it.
        XCTAssertLessThan(Date().timeIntervalSince(sent), 5, service.log)
    }

    func testNoWatchdogPingsWithoutWatchdogUsec() throws {
        let service = try ServiceProcess("player", in: dir)
        defer { service.kill9() }
        try service.waitReady()
        XCTAssertFalse(service.notify.wait(for: "WATCHDOG=1", timeout: 1))
    }

    func testCtlCallPrintsTheResultAndMapsErrorsToExitCodes() throws {
        let reporter = try ServiceProcess("reporter", in: dir)
        defer { reporter.kill9() }
        try reporter.waitReady()

        let ok = try runCtl(["call", "reporter", "service.status", "--runtime-dir", dir.runtimeDir])
        XCTAssertEqual(ok.status, 0, ok.stderr)
        let json = try JSONCoding.decoder().decode(JSONValue.self, from: Data(ok.stdout.utf8))
        XCTAssertEqual(json["service"], "reporter")

        let unknown = try runCtl(["call", "reporter", "no.such", "--runtime-dir", dir.runtimeDir])
        XCTAssertEqual(unknown.status, 1)
        XCTAssertTrue(unknown.stderr.contains("MethodNotFound"), unknown.stderr)

        let badParams = try runCtl(["call", "reporter", "events.subscribe", "[1]", "--runtime-dir", dir.runtimeDir])
        XCTAssertEqual(badParams.status, 64, badParams.stderr)

        let down = try runCtl(["call", "player", "service.status", "--runtime-dir", dir.runtimeDir])
        XCTAssertEqual(down.status, 69)
        XCTAssertTrue(down.stderr.contains("is it running"), down.stderr)
    }

    func testCtlWatchPrintsEventsOfASubscription() throws {
        // Events themselves are covered by each service's own tests; this proves
        // the CLI subscribes and ends cleanly when the service closes the connection on SIGTERM.
        let player = try ServiceProcess("player", in: dir)
        try player.waitReady()
        let ctl = Process()
        ctl.executableURL = URL(fileURLWithPath: Binaries.path("cassettectl"))
        ctl.arguments = ["watch", "player", "player", "--runtime-dir", dir.runtimeDir]
        try ctl.run()
        let deadline = Date().addingTimeInterval(10)
        var subscribed = false
        while Date() < deadline, !subscribed {
            let raw = try player.raw()
            try raw.send(RawSocket.request(id: 1, method: "service.status"))
            subscribed = (try raw.readFrame()?["result"]?["subscribers"]?.intValue ?? 0) == 1
            if !subscribed { usleep(50_000) }
        }
        XCTAssertTrue(subscribed, "cassettectl watch did not subscribe")
        player.signal(SIGTERM)
        XCTAssertEqual(try player.waitExit(), 0)
        let stop = Date().addingTimeInterval(10)
        while ctl.isRunning && Date() < stop { usleep(20_000) }
        XCTAssertFalse(ctl.isRunning, "watch should end when the service closes the connection")
        if ctl.isRunning { ctl.terminate() }
    }

    /// `service.status` shows the most recent health verdict, checked in the background every
    /// few seconds (not per call): the same figures, older each time, until the next round
    /// replaces them; `ok`, `problems`, `checkedAt` and `ageSeconds` come with them.
    func testStatusShowsTheLatestBackgroundHealthCheckWithItsAge() async throws {
        let service = try ServiceProcess("reporter", in: dir)
        defer { service.kill9() }
        try service.waitReady()
        let raw = try service.raw()
        var id = 0
        func health() throws -> JSONValue? {
            id += 1
            try raw.send(RawSocket.request(id: id, method: "service.status"))
            let result = try raw.readFrame()?["result"]
            return result?["catalog"]?["state"] == "ready" ? result?["health"] : nil
        }
        // A verdict between 0.2 and 2 seconds old, so the next call, at once, falls before the
        // next round (and after the one the start may run beside the first call's).
        let deadline = Date().addingTimeInterval(20)
        var first = try health()
        while !(200..<2_000).contains(first?["checkedMsAgo"]?.doubleValue ?? .infinity), Date() < deadline {
            usleep(50_000)
            first = try health()
        }
        let second = try XCTUnwrap(try health())
        let checked = try XCTUnwrap(first)
        XCTAssertEqual(checked["healthy"], true)
        XCTAssertEqual(checked["ok"], true)
        XCTAssertEqual(checked["problems"], [])
        for part in ["eventLoopMs", "cooperativePoolMs", "catalogMs", "checkedAt"] {
            XCTAssertEqual(second[part], checked[part], "a call shows the last round's verdict, it runs none: \(checked) then \(second)")
        }
        let ages = [checked, second].compactMap { $0["checkedMsAgo"]?.doubleValue }
        XCTAssertEqual(ages.count, 2)
        XCTAssertLessThanOrEqual(ages[0], ages[1])
        // The next background round replaces it by itself; a verdict is never much older than a round.
        try await waitUntil("a new background round", timeout: 20) {
            let later = try XCTUnwrap(try health())
            XCTAssertLessThan(try XCTUnwrap(later["ageSeconds"]?.doubleValue), 10, "\(later)")
            return later["checkedAt"] != checked["checkedAt"]
        }
    }

    func runCtl(_ args: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Binaries.path("cassettectl"))
        process.arguments = args
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
    }
}
