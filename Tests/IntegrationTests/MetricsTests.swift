import Foundation
import TestSupport
import Wire
import XCTest

/// `service.metrics` and `metricsFile` through the real binaries, the text checked by a real
/// OpenMetrics parser (docs/protocol.md, "service.metrics").
final class MetricsTests: XCTestCase {
    func testEveryServicePublishesOpenMetricsWithTheContractNames() async throws {
        let stack = try FleetStack()
        defer { stack.discard() }
        try stack.startAll()
        // Something on the device, so the forecast has an item to count.
        let sync = try stack.ctl(["sync", "st-9"])
        XCTAssertEqual(sync.status, 0, sync.all + stack.logs)

        let downloader = try stack.metrics("downloader")
        for name in [
            "cassette_up", "cassette_downloads_pending", "cassette_download_bytes_total", "cassette_media_bytes",
            "cassette_storage_bytes_written_total", "cassette_offline_playable_seconds", "cassette_seconds_until_silence",
        ] {
            XCTAssertNotNil(downloader[name], "downloader lacks \(name): \(downloader)")
        }
        XCTAssertEqual(downloader["cassette_up"], 1)
        XCTAssertEqual(downloader["cassette_downloads_pending"], 0)
        XCTAssertGreaterThan(downloader["cassette_download_bytes_total"] ?? 0, 0)
        XCTAssertGreaterThan(downloader["cassette_media_bytes"] ?? 0, 0)
        XCTAssertGreaterThanOrEqual(downloader["cassette_storage_bytes_written_total"] ?? 0, downloader["cassette_media_bytes"] ?? 0)

        let forecast = try XCTUnwrap(try stack.ctl(["call", "downloader", "offline.forecast"]).json)
        XCTAssertGreaterThan(forecast["playableSeconds"]?.doubleValue ?? 0, 0, "\(forecast)")
        XCTAssertEqual(downloader["cassette_offline_playable_seconds"], forecast["playableSeconds"]?.doubleValue)
        if forecast["silentAt"] == .null {
            XCTAssertEqual(downloader["cassette_seconds_until_silence"], 1e308, "nothing expires: +Inf")
        } else {
            XCTAssertGreaterThan(downloader["cassette_seconds_until_silence"] ?? 0, 0)
        }

        let player = try stack.metrics("player")
        XCTAssertEqual(player["cassette_up"], 1)
        XCTAssertEqual(player["cassette_output_underruns_total"], 0)
        XCTAssertEqual(player[#"cassette_playback_state{state="IDLE"}"#], 1, "\(player)")
        XCTAssertEqual(player[#"cassette_playback_state{state="PLAYING"}"#], 0, "\(player)")

        let reporter = try stack.metrics("reporter")
        XCTAssertEqual(reporter["cassette_up"], 1)
        XCTAssertEqual(reporter["cassette_plays_pending"], 0)
        XCTAssertEqual(reporter["cassette_plays_delivered_total"], 0)
        // Every text ends with the marker node_exporter and Prometheus require.
        XCTAssertTrue(try stack.ctl(["metrics", "reporter"]).stdout.hasSuffix("# EOF\n"))
    }

    func testTotalsSurviveARestart() async throws {
        let stack = try FleetStack()
        defer { stack.discard() }
        try stack.start("downloader")
        try stack.start("reporter")
        XCTAssertEqual(try stack.ctl(["sync", "st-9"]).status, 0, stack.logs)
        let client = try await stack.running["reporter"]!.client()
        for _ in 0..<3 { _ = try await client.call("playlog.record", ["event": HealthGateTests.play()]) }
        try await waitUntil("the plays delivered\n\(stack.logs)") {
            try await client.call("playlog.status")["pending"]?.intValue == 0
        }
        await client.close()
        // Counted once the origin's answer is committed (a moment after the queue emptied).
        try await waitUntil("3 deliveries counted\n\(stack.logs)") {
            try stack.metrics("reporter")["cassette_plays_delivered_total"] == 3
        }
        let downloaded = try XCTUnwrap(try stack.metrics("downloader")["cassette_download_bytes_total"])
        XCTAssertGreaterThan(downloaded, 0)
        let written = try XCTUnwrap(try stack.metrics("downloader")["cassette_storage_bytes_written_total"])

        try stack.stop("reporter")
        try stack.stop("downloader")
        try stack.start("reporter")
        try stack.start("downloader")
        XCTAssertEqual(try stack.metrics("reporter")["cassette_plays_delivered_total"], 3)
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(try stack.metrics("downloader")["cassette_download_bytes_total"]), downloaded)
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(try stack.metrics("downloader")["cassette_storage_bytes_written_total"]), written)
    }

    func testTheMetricsFileIsReplacedWholeAndSaysDownAtStop() async throws {
        let dir = try TestDirectory(prefix: "metricsfile")
        defer { dir.remove() }
        let file = dir.path + "/textfile/cassette_reporter.prom"
        try FileManager.default.createDirectory(atPath: dir.path + "/textfile", withIntermediateDirectories: true)
        let stack = try FleetStack(origin: false, config: #"{"reporter":{"metricsFile":"\#(file)","metricsIntervalSeconds":1}}"#)
        defer { stack.discard() }
        try stack.start("reporter")
        func inode() -> UInt64? {
            var info = stat()
            return stat(file, &info) == 0 ? UInt64(info.st_ino) : nil
        }
        try await waitUntil("the metrics file written\n\(stack.logs)") { inode() != nil }
        let first = try XCTUnwrap(inode())
        // Every read finds a whole text, and a rewrite replaces the file (a new inode: rename).
        var reads = 0
        try await waitUntil("the metrics file rewritten\n\(stack.logs)") {
            let text = try String(contentsOfFile: file, encoding: .utf8)
            XCTAssertTrue(text.hasSuffix("# EOF\n"), text)
            reads += 1
            return inode() != first
        }
        let values = try OpenMetricsParser.parse(try String(contentsOfFile: file, encoding: .utf8))
        XCTAssertEqual(values["cassette_up"], 1)
        XCTAssertNotNil(values["cassette_plays_pending"])
        var info = stat()
        XCTAssertEqual(stat(file, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o644, "node_exporter runs as its own user")
        try stack.stop("reporter")
        let last = try OpenMetricsParser.parse(try String(contentsOfFile: file, encoding: .utf8))
        XCTAssertEqual(last["cassette_up"], 0, "a stopped service does not look up")
        XCTAssertEqual(
            try FileManager.default.contentsOfDirectory(atPath: dir.path + "/textfile"), ["cassette_reporter.prom"],
            "no temporary file left behind")
        XCTAssertGreaterThan(reads, 0)
    }

    func testABadMetricsKeyStopsTheServiceWithConfigInvalid() throws {
        let dir = try TestDirectory(prefix: "metricskey")
        defer { dir.remove() }
        let config = try dir.writeConfig(#"{"player":{"metricsIntervalSeconds":0}}"#)
        let run = try Command.run(
            Binaries.path("player"),
            [
                "--runtime-dir", dir.runtimeDir, "--state-dir", dir.stateDir,
                "--config", config, "--audio-device", "null",
            ], timeout: 30)
        XCTAssertEqual(run.status, 78, run.all)
        XCTAssertTrue(run.output.contains("player.metricsIntervalSeconds must be a number from 1 to 86400"), run.all)
    }
}
