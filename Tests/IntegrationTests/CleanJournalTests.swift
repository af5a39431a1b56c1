import Foundation
import Glibc
import TestSupport
import Wire
import XCTest

/// docs/operations.md, "Logs": an ordinary day logs nothing at warning or above. The three
/// services and the reference origin start, a station is synced, played and its play delivered
/// to the origin, and everything stops: no line at warning, error or critical in any log, and
/// nothing from libdispatch (told to write to stderr here; under systemd it writes to syslog).
final class CleanJournalTests: XCTestCase {
    func testStartSyncPlayAndStopLogNothingAtWarningOrAbove() async throws {
        let origin = try OriginProcess.start()
        defer { origin.discard() }
        let dir = try TestDirectory(prefix: "cjn")
        defer { dir.remove() }
        let env = ["CASSETTE_CLIENT_TOKEN": "demo", "CASSETTE_CLIENT_SECRET": "demo", "LIBDISPATCH_LOG": "stderr"]
        // The downloader first, as socket activation would have it: the player tells it the
        // app's offline mode as it starts, and hands its plays to the reporter.
        var services: [ServiceProcess] = []
        defer { services.forEach { $0.kill9() } }
        for name in ["downloader", "reporter", "player"] {
            var args = ["--origin", origin.baseURL]
            if name == "player" { args += ["--audio-device", "null", "--audio-pace", "realtime"] }
            let service = try ServiceProcess(name, in: dir, extraArgs: args, environment: env)
            services.append(service)
            try service.waitReady()
        }
        let (downloader, reporter, player) = (services[0], services[1], services[2])
        var logs: String { services.map { "--- \($0.name)\n\($0.log.suffix(4000))" }.joined(separator: "\n") }

        let toDownloader = try await downloader.client()
        _ = try await toDownloader.call("stations.sync", ["stationId": "st-9"], timeout: .seconds(10))
        try await waitUntil("st-9 synced\n\(logs)", timeout: 60) {
            let stations = try await toDownloader.call("stations.list", timeout: .seconds(10))
            let held = stations["localOffline"]?.arrayValue?.first { $0["id"] == "st-9" }
            return held?["verifiedCount"]?.intValue == 3
        }
        await toDownloader.close()

        let toPlayer = try await player.client()
        _ = try await toPlayer.call("station.tune", ["stationId": "st-9"], timeout: .seconds(10))
        try await waitUntil("PLAYING\n\(logs)") {
            try await toPlayer.call("player.status", timeout: .seconds(5))["playbackState"]?.stringValue == "PLAYING"
        }
        try await Task.sleep(for: .seconds(1))
        _ = try await toPlayer.call("player.reset", timeout: .seconds(10))
        await toPlayer.close()

        // The play went from the player to the reporter and on to the origin.
        let toReporter = try await reporter.client()
        try await waitUntil("a play delivered\n\(logs)", timeout: 30) {
            let status = try await toReporter.call("playlog.status", timeout: .seconds(5))
            return (status["plays"]?["delivered"]?.intValue ?? 0) >= 1
        }
        await toReporter.close()

        for service in services.reversed() {
            service.signal(SIGTERM)
            XCTAssertEqual(try service.waitExit(timeout: 10), 0, "\(service.name):\n\(service.log)")
        }
        for service in services {
            XCTAssertEqual(service.warningOrWorseLines, [], "\(service.name):\n\(service.log)")
            XCTAssertFalse(service.log.contains("Failed to set thread priority"), "\(service.name):\n\(service.log)")
        }
    }
}
