import Foundation
import TestSupport
import Wire
import XCTest

/// The audio output supervised through real ALSA plugins (the host has no sound card; `null` and
/// `file` PCMs, defined through `ALSA_CONFIG_PATH`): a device that does not exist is answered
/// `OutputUnavailable` and plays by itself once it is defined; a device that fails mid-play is
/// reopened and the station plays on without a new call; plays record heard seconds only.
final class OutputSupervisionTests: XCTestCase {
    static let bytesPerSecond = 44_100 * 4

    func testMissingDeviceIsAnsweredThenPlaysOnceDefined() async throws { try await missingDevice(cpus: nil) }
    func testMissingDeviceOnOneCore() async throws { try await missingDevice(cpus: "0") }

    func testFailedDeviceIsReopenedAndPlaysOn() async throws { try await failingFIFO(cpus: nil) }
    func testFailedDeviceIsReopenedAndPlaysOnOneCore() async throws { try await failingFIFO(cpus: "0") }

    /// (a), (b), (e): no such PCM → `station.tune` answers `OutputUnavailable`, `cassettectl tune`
    /// exits 2 with a hint, status says why; the PCM defined later in a file of
    /// `ALSA_CONFIG_PATH` → playback starts by itself; the play covers the heard seconds only.
    private func missingDevice(cpus: String?) async throws {
        let h = try PlayerHarness()
        let a = try h.makeTrack("so-a", seconds: 4, frequency: 440)
        let b = try h.makeTrack("so-b", seconds: 4, frequency: 660)
        try h.addStation("st-so", name: "Supervised", items: [("so-a", a, "verified"), ("so-b", b, "verified")])
        let alsa = try LateALSAConfig(dir: h.dir.path)
        let client = try await h.start(pace: "realtime", environment: alsa.environment, cpus: cpus, device: "late_pcm")
        let log = EventLog(client)

        let asked = Date()
        do {
            _ = try await h.call("station.tune", ["stationId": "st-so"])
            XCTFail("station.tune answered ok with no device")
        } catch let error as RPCError {
            XCTAssertEqual(error.name, "OutputUnavailable", "\(error)")
            XCTAssertEqual(error.code, 2011)
            XCTAssertTrue(error.message.contains("late_pcm"), error.message)
        }
        let answeredAfter = Date().timeIntervalSince(asked)
        XCTAssertLessThan(answeredAfter, 10, "answered within the call's bound")
        let events = try await log.until { $0.type == "OutputUnavailable" }
        XCTAssertTrue(events.last?.data["reason"]?.stringValue?.contains("snd_pcm_open(late_pcm)") == true, "\(events.map(EventLog.describe))")
        XCTAssertFalse(events.contains { $0.type == "PlaybackStateChanged" && $0.data["playbackState"] == "IDLE" }, "the station stays tuned")
        var status = try await h.status()
        XCTAssertEqual(status["playbackState"], "STALLED", "\(status)")
        XCTAssertEqual(status["output"]?["state"], "UNAVAILABLE", "\(status)")
        XCTAssertEqual(status["output"]?["error"]?["name"], "OutputUnavailable", "\(status)")
        XCTAssertEqual(status["activeStation"]?["id"], "st-so")

        let ctl = try h.ctl(["tune", "st-so"])
        XCTAssertEqual(ctl.status, 2, "\(ctl)")
        XCTAssertTrue(ctl.stderr.contains("OutputUnavailable"), ctl.stderr)
        XCTAssertTrue(ctl.stderr.contains("aplay -L") && ctl.stderr.contains("audioDevice"), ctl.stderr)
        var plays = try await h.recordedPlays()
        XCTAssertEqual(plays.count, 0, "nothing was heard, so nothing was played: \(plays)")

        // The device is defined: the player finds it by itself and the station plays.
        let defined = Date()
        try alsa.define(LateALSAConfig.filePCM("late_pcm", into: h.capturePath))
        _ = try await log.until(timeout: 20) { $0.type == "OutputAvailable" }
        _ = try await log.untilState("PLAYING", timeout: 20)
        try await h.waitFor("sound reaching the device") { h.captured.count > Self.bytesPerSecond / 2 }
        print(
            "missing device (cpus \(cpus ?? "all")): answered OutputUnavailable after \(String(format: "%.2f", answeredAfter)) s; "
                + "playing \(String(format: "%.2f", Date().timeIntervalSince(defined))) s after the PCM was defined")
        status = try await h.status()
        XCTAssertEqual(status["output"]?["state"], "OPEN", "\(status)")
        XCTAssertEqual(status["output"]?["error"], .null, "\(status)")

        try await h.waitFor("a second heard") { (try await h.status()["assetPosition"]?.doubleValue ?? 0) >= 1 }
        _ = try await h.call("player.reset")
        let heard = Double(h.captured.count) / Double(Self.bytesPerSecond)
        try await h.waitFor("the play closed") {
            try await h.recordedPlays().contains { $0["endPosition"]?.doubleValue ?? 0 > 0.5 }
        }
        plays = try await h.recordedPlays()
        XCTAssertEqual(plays.count, 1, "one play, for the item heard: \(plays)")
        let play = try XCTUnwrap(plays.first)
        XCTAssertEqual(play["productId"], "so-a")
        let seconds = (play["endPosition"]?.doubleValue ?? 0) - (play["startPosition"]?.doubleValue ?? 0)
        XCTAssertLessThanOrEqual(seconds, heard + 0.01, "the play holds no more than what reached the device")
        XCTAssertGreaterThan(seconds, 0.5)
        await h.stop()
    }

    /// (c): a `file` PCM into a FIFO whose reader dies and comes back. `OutputUnavailable` comes
    /// (STALLED, the watchdog still pings: the reason is reported), then the device is opened
    /// again and sound flows without a new call.
    private func failingFIFO(cpus: String?) async throws {
        let h = try PlayerHarness()
        let a = try h.makeTrack("so-a", seconds: 20, frequency: 440)
        let b = try h.makeTrack("so-b", seconds: 20, frequency: 660)
        try h.addStation("st-so", name: "Supervised", items: [("so-a", a, "verified"), ("so-b", b, "verified")])
        let alsa = try LateALSAConfig(dir: h.dir.path)
        let reader = try FIFOReader(path: h.dir.path + "/out.fifo")
        defer { reader.finish() }
        try alsa.define(LateALSAConfig.filePCM("fifo_out", into: reader.path))
        var environment = alsa.environment
        environment["WATCHDOG_USEC"] = "400000"
        let client = try await h.start(pace: "realtime", environment: environment, cpus: cpus, device: "fifo_out")
        let log = EventLog(client)
        _ = try await h.call("station.tune", ["stationId": "st-so"])
        try await h.waitFor("sound in the FIFO") { reader.bytes > Self.bytesPerSecond }
        let notify = try XCTUnwrap(h.player?.notify)
        XCTAssertGreaterThan(notify.pings(during: 1), 0, "pings while sound flows")

        reader.close()
        let lost = try await log.until(timeout: 20) { $0.type == "OutputUnavailable" }
        XCTAssertTrue(lost.last?.data["reason"]?.stringValue?.contains("snd_pcm_writei") == true, "\(lost.last?.data ?? .null)")
        XCTAssertFalse(lost.contains { $0.type == "PlaybackStateChanged" && $0.data["playbackState"] == "IDLE" })
        var status = try await h.status()
        XCTAssertEqual(status["output"]?["state"], "UNAVAILABLE", "\(status)")
        XCTAssertEqual(status["playbackState"], "STALLED", "\(status)")
        let frozen = status["assetPosition"]?.doubleValue ?? -1
        XCTAssertGreaterThan(notify.pings(during: 1), 0, "the watchdog pings: the silence has a reported reason")
        let later = try await h.status()
        XCTAssertEqual(later["assetPosition"]?.doubleValue, frozen, "the position waits while nothing is heard")

        let before = reader.bytes
        let back = Date()
        reader.mark()
        reader.open()
        try await h.waitFor("sound in the FIFO again") { reader.bytes > before }
        let flowing = (reader.lastArrivalDate ?? Date()).timeIntervalSince(back)
        _ = try await log.until(timeout: 20) { $0.type == "OutputAvailable" }
        _ = try await log.untilState("PLAYING", timeout: 20)
        try await h.waitFor("the position moving on") { (try await h.status()["assetPosition"]?.doubleValue ?? 0) > frozen + 0.5 }
        status = try await h.status()
        XCTAssertEqual(status["output"]?["state"], "OPEN", "\(status)")
        XCTAssertEqual(status["mediaProduct"]?["productId"], "so-a", "the same item plays on")
        // Faded in: the first 5 ms are far quieter than the tone at full level after 0.1 s.
        let resumed = reader.keptBytes.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        XCTAssertGreaterThan(resumed.count, 2 * 44_100 / 5, "0.2 s kept after the reader came back")
        func peak(_ frames: Range<Int>) -> Int { resumed[(frames.lowerBound * 2)..<min(resumed.count, frames.upperBound * 2)].map { abs(Int($0)) }.max() ?? 0 }
        let start = peak(0..<220), full = peak(4_410..<8_820)
        XCTAssertGreaterThan(full, 1_000, "the tone plays at its level")
        XCTAssertLessThan(start, full / 10, "a soft start after the reopen: \(start) then \(full)")
        print("failed device (cpus \(cpus ?? "all")): sound flowing \(String(format: "%.3f", flowing)) s after the FIFO's reader came back")
        await h.stop()
    }

    /// A player meant to play whose device takes nothing (the FIFO's reader stops reading, so the
    /// write blocks) and that reports no reason stops pinging the watchdog; it pings again once
    /// sound flows.
    func testWedgedOutputWithholdsTheWatchdogPing() async throws {
        let h = try PlayerHarness()
        let a = try h.makeTrack("so-a", seconds: 30, frequency: 440)
        try h.addStation("st-so", name: "Supervised", items: [("so-a", a, "verified")])
        let alsa = try LateALSAConfig(dir: h.dir.path)
        let reader = try FIFOReader(path: h.dir.path + "/out.fifo")
        defer { reader.finish() }
        try alsa.define(LateALSAConfig.filePCM("fifo_out", into: reader.path))
        var environment = alsa.environment
        environment["WATCHDOG_USEC"] = "400000"
        _ = try await h.start(pace: "realtime", environment: environment, device: "fifo_out")
        _ = try await h.call("station.tune", ["stationId": "st-so"])
        try await h.waitFor("sound in the FIFO") { reader.bytes > Self.bytesPerSecond / 2 }
        let notify = try XCTUnwrap(h.player?.notify)
        XCTAssertGreaterThan(notify.pings(during: 1), 0)

        reader.setReading(false)
        let deadline = Date().addingTimeInterval(30)
        var silentWindow = false
        while Date() < deadline {
            if notify.pings(during: 1.5) == 0 {
                silentWindow = true
                break
            }
        }
        XCTAssertTrue(silentWindow, "the watchdog kept pinging while nothing reached the device")
        let status = try await h.status()
        XCTAssertEqual(status["playbackState"], "PLAYING", "no reason was reported: \(status)")
        let log = (try? String(contentsOfFile: h.player?.logPath ?? "", encoding: .utf8)) ?? ""
        XCTAssertTrue(log.contains("no audio reached the device"), "the reason is logged")

        reader.setReading(true)
        XCTAssertTrue(notify.wait(for: "WATCHDOG=1", timeout: 1) && notify.pings(during: 5) > 0, "pings again once sound flows")
        await h.stop()
    }
}
