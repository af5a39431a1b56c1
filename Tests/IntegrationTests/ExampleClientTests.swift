import Foundation
import TestSupport
import Wire
import XCTest

/// examples/play_station.py (the Python client) against the real services and origin: it lists,
/// syncs, plays and reports, and the play arrives at the origin.
final class ExampleClientTests: XCTestCase {
    func testPythonExamplePlaysAStationAndItsPlayReachesTheOrigin() async throws {
        let python = try Command.run("/usr/bin/env", ["python3", "--version"])
        try XCTSkipIf(python.status != 0, "python3 is not installed")
        let stack = try CassetteStack()
        defer { stack.stop() }

        let script = Command.repository.appendingPathComponent("examples/play_station.py").path
        let run = try Command.run(
            "/usr/bin/env",
            [
                "python3", script, "--runtime-dir", stack.dir.runtimeDir,
                "--station", "st-9", "--seconds", "3",
            ])
        XCTAssertEqual(run.status, 0, run.all + stack.logs)
        XCTAssertTrue(run.stdout.contains("st-9"), run.all)
        XCTAssertTrue(run.stdout.contains("synced st-9: 3/3 items"), run.all)
        XCTAssertTrue(run.stdout.contains("event player    PlaybackStateChanged"), run.all)
        XCTAssertTrue(run.stdout.contains("\ndone\n"), run.all)

        // The play the script stopped went player → reporter → origin.
        var unique = 0
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            unique = (try await stack.api.stats()).object("plays").int("unique") ?? 0
            if unique > 0 { break }
            try await Task.sleep(nanoseconds: 200_000_000)
        }
        XCTAssertGreaterThan(unique, 0, run.all + stack.logs)
    }
}
