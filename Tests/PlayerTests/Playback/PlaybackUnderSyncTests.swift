import Foundation
import TestSupport
import Wire
import XCTest

/// A one-core device playing while its downloader syncs a station of 1 000 files: the player and
/// the downloader share core 0 (the origin, being the network, does not). The audio threads have
/// no priority of their own, so this is what shows that hashing, fsyncs and catalog commits on
/// eight transfer threads leave them their turn: the state stays PLAYING (the decoder kept the
/// pipe filled) and the heard position keeps pace with the clock (the output thread was never
/// late by more than its device buffer, which would skip audio).
final class PlaybackUnderSyncTests: XCTestCase {
    static let station = "st-load"
    static let files = 1_000
    static let trackSeconds = 30.0
    /// Audio the output may lose over the whole sync before it counts as a dropout: two device
    /// buffers (60 ms each) beyond the position's own granularity.
    static let allowedLossSeconds = 0.15

    func testPlaybackKeepsPaceWhileAThousandFileStationSyncsOnTheSameCore() async throws {
        let h = try PlayerHarness()
        let track = try h.makeTrack("long", seconds: Self.trackSeconds, frequency: 440, format: .aac44)
        try h.addStation("st-long", name: "Long", items: [("long-1", track, "verified")])
        try h.describe("long-1", format: .aac44, seconds: Self.trackSeconds)
        let origin = try OriginProcess.start(synthetic: ["\(Self.station)=\(Self.files)x200k"])
        defer { origin.discard() }

        let player = try await h.start(pace: "realtime", cpus: "0")
        let log = EventLog(player)
        _ = try await h.call("station.tune", ["stationId": "st-long"])
        _ = try await log.untilState("PLAYING")
        let downloader = try ServiceProcess(
            "downloader", in: h.dir, launch: .pinned(cpus: "0"),
            extraArgs: ["--origin", origin.baseURL], environment: PlayerHarness.originCredentials)
        defer { downloader.kill9() }
        try downloader.waitReady()
        let manage = try await downloader.client()
        let downloads = EventCollector(manage)
        _ = try await manage.call("events.subscribe", ["topics": ["downloads"]])

        let before = try await position(h)
        let answer = try await manage.call("stations.sync", ["stationId": .string(Self.station)])
        XCTAssertEqual(answer["total"]?.intValue, Self.files, "\(answer)")
        let complete = try await downloads.wait("StationDownloadComplete", from: 0, timeout: 120) {
            $0.type == "StationDownloadComplete" && $0.data["stationId"]?.stringValue == Self.station
        }
        let after = try await position(h)
        XCTAssertEqual(complete.data["failed"]?.intValue, 0, "\(complete.data)")

        let heard = after.seconds - before.seconds, elapsed = after.at.timeIntervalSince(before.at)
        print(String(format: "one core, %d-file sync beside playback: %.3f s elapsed, %.3f s heard", Self.files, elapsed, heard))
        XCTAssertLessThan(after.seconds, Self.trackSeconds - 1, "the track was still playing when the sync ended")
        XCTAssertGreaterThan(elapsed, 0.5, "the sync took long enough to compete with playback")
        XCTAssertGreaterThanOrEqual(
            heard, elapsed - Self.allowedLossSeconds,
            "the output skipped audio: \(heard) s heard in \(elapsed) s")
        let states = log.sinceLastRead().filter { $0.type == "PlaybackStateChanged" }
        XCTAssertEqual(states.map(EventLog.describe), [], "no state change while the station synced (no STALLED)")
        _ = try await h.call("player.reset")
        await manage.close()
        await h.stop()
    }

    /// The heard position and when it was read (the middle of the call).
    private func position(_ h: PlayerHarness) async throws -> (seconds: Double, at: Date) {
        let sent = Date()
        let status = try await h.call("player.status")
        let answered = Date()
        let seconds = try XCTUnwrap(status["assetPosition"]?.doubleValue, "\(status)")
        XCTAssertEqual(status["playbackState"]?.stringValue, "PLAYING", "\(status)")
        return (seconds, sent.addingTimeInterval(answered.timeIntervalSince(sent) / 2))
    }
}
