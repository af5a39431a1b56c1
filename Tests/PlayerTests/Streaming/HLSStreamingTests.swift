import Foundation
import GRDB
import TestSupport
import Wire
import XCTest

@testable import StateDB

/// A TIDAL track delivered as HLS (`tr-hls` of the reference origin) that is not on the device is
/// streamed: the variant the streaming quality picks, its AES-128 key under a streaming license,
/// its segments fetched as they are played, under a streaming session; the device gets exactly
/// what FFmpeg decodes from the origin's own presentation, and the play event covers it all.
final class HLSStreamingTests: XCTestCase {
    private func rig(quality: String, pace: String = "device") async throws -> (PlayerHarness, OriginProcess, EventLog) {
        let h = try PlayerHarness()
        let origin = try OriginProcess.start()
        let client = try await h.start(pace: pace, extraArgs: ["--origin", origin.baseURL], environment: PlayerHarness.originCredentials)
        _ = try await h.call("player.config.set", ["loudnessNormalizationMode": "OFF", "streamingQualityWifi": .string(quality)])
        return (h, origin, EventLog(client))
    }

    private static func describe(_ events: [RPCEvent]) -> String {
        events.map { "\($0.type) \($0.data)" }.joined(separator: "\n")
    }

    func testAnHLSTrackNotOfflinedStreamsToTheEndWithItsPlayEvent() async throws {
        let (h, origin, log) = try await rig(quality: "HIGH")
        defer { origin.discard() }
        let api = OriginAPI(origin: origin)

        _ = try await h.call("player.load", PlayerHarness.product("tr-hls"))
        _ = try await h.call("player.play")
        let events = try await log.untilState("IDLE", timeout: 30)
        XCTAssertFalse(events.contains { $0.data["message"] != nil }, "no error event:\n\(Self.describe(events))")
        let transition = try XCTUnwrap(events.first { $0.type == "MediaProductTransition" }, Self.describe(events))
        let context = try XCTUnwrap(transition.data["playbackContext"])
        XCTAssertEqual(context["offline"]?.boolValue, false, "streamed: \(context)")
        // HIGH picks the AAC variant: the first one the master playlist lists, and its bit rate.
        let master = String(decoding: try await api.get("/media/tr-hls/master.m3u8").body, as: UTF8.self)
        let bandwidth = try XCTUnwrap(
            master.split(separator: "\n").first { $0.contains("BANDWIDTH=") }
                .flatMap { $0.split(separator: "BANDWIDTH=").last?.split(separator: ",").first }.flatMap { Int($0) })
        XCTAssertEqual(context["audioBitRate"]?.intValue, bandwidth, "the rate of the variant played: \(context)")
        XCTAssertTrue(events.contains { $0.data["playbackContext"]?["audioCodec"]?.stringValue == "aac" }, Self.describe(events))

        // Every sample of the variant, in order.
        let reference = try await HLSReference.decoded(origin, variant: "a0", in: h)
        XCTAssertGreaterThan(reference.count, 4 * 44_100 * 4, "at least 4 s of stereo 16-bit")
        XCTAssertEqual(h.captured.count, reference.count, "sample-exact length")
        XCTAssertTrue(h.captured == reference, "the device got exactly FFmpeg's decode of the origin's AAC variant")

        // The segments came from the origin as they were played, under a streaming session.
        let stats = try await api.stats()
        let requests = stats.object("requests")
        XCTAssertGreaterThan(requests.keys.filter { $0.hasPrefix("/media/tr-hls/a0/seg") }.count, 1, "segments fetched: \(requests)")
        XCTAssertEqual(requests.keys.filter { $0.hasPrefix("/media/tr-hls/a1/") }.count, 0, "the other variant untouched: \(requests)")
        let streaming = try await api.streaming()
        XCTAssertGreaterThanOrEqual(streaming.int("started") ?? 0, 1, "a streaming session was held: \(streaming)")

        // The play event: the whole track, streamed.
        await h.stop()
        let bodies = try await h.catalog.pool.read { db in
            try String.fetchAll(db, sql: "SELECT body FROM playerPlays WHERE kind = 'play'")
        }
        XCTAssertEqual(bodies.count, 1, "one play, kept by the player (no reporter here)")
        let play = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(try XCTUnwrap(bodies.first).utf8)) as? [String: Any])
        XCTAssertEqual(play["productId"] as? String, "tr-hls")
        XCTAssertEqual(play["offline"] as? Bool, false)
        XCTAssertEqual(play["startPosition"] as? Double, 0)
        let seconds = Double(reference.count) / (44_100 * 4)
        XCTAssertEqual(try XCTUnwrap(play["endPosition"] as? Double), seconds, accuracy: 0.1, "ended at the end of the track")
        XCTAssertEqual(play["playbackSessionId"] as? String, context["playbackSessionId"]?.stringValue)
    }

    func testLosslessQualityStreamsTheFLACVariant() async throws {
        let (h, origin, log) = try await rig(quality: "LOSSLESS")
        defer { origin.discard() }
        _ = try await h.call("player.load", PlayerHarness.product("tr-hls"))
        _ = try await h.call("player.play")
        let events = try await log.untilState("IDLE", timeout: 30)
        XCTAssertFalse(events.contains { $0.data["message"] != nil }, "no error event:\n\(Self.describe(events))")
        XCTAssertTrue(events.contains { $0.data["playbackContext"]?["audioCodec"]?.stringValue == "flac" }, Self.describe(events))
        XCTAssertTrue(events.contains { $0.data["playbackContext"]?["audioQuality"]?.stringValue == "LOSSLESS" }, Self.describe(events))
        let reference = try await HLSReference.decoded(origin, variant: "a1", in: h)
        XCTAssertEqual(h.captured.count, reference.count, "sample-exact length")
        XCTAssertTrue(h.captured == reference, "the device got the FLAC variant (fMP4 init section and fragments) bit for bit")
    }

    /// The second segment arrives seconds after it is needed: playback is STALLED meanwhile, every
    /// sample is still heard in order, and the session's statistics record the stall where it was.
    func testALateSegmentStallsAndTheStatisticsRecordTheStall() async throws {
        let (h, origin, log) = try await rig(quality: "HIGH", pace: "realtime")
        defer { origin.discard() }
        _ = try await h.call("events.subscribe", ["topics": ["metrics"]])
        let api = OriginAPI(origin: origin)
        try await api.injectFaults("/media/tr-hls/a0/seg001.ts", [["delayMs": 5_000]])
        _ = try await h.call("player.load", PlayerHarness.product("tr-hls"))
        _ = try await h.call("player.play")
        let events = try await log.until(timeout: 40) { $0.type == "StreamingSessionEnd" }
        let states = events.filter { $0.type == "PlaybackStateChanged" }.compactMap { $0.data["playbackState"]?.stringValue }
        XCTAssertTrue(states.contains("STALLED"), "STALLED while the segment was late: \(states)")
        let statistics = try XCTUnwrap(events.first { $0.type == "PlaybackStatistics" }?.data["payload"], Self.describe(events))
        XCTAssertEqual(statistics["endReason"]?.stringValue, "COMPLETE", "\(statistics)")
        let stalls = try XCTUnwrap(statistics["stalls"]?.arrayValue, "\(statistics)")
        XCTAssertEqual(stalls.count, 1, "one stall: \(statistics)")
        let stall = try XCTUnwrap(stalls.first)
        XCTAssertEqual(stall["reason"]?.stringValue, "UNEXPECTED")
        XCTAssertEqual(try XCTUnwrap(stall["assetPosition"]?.doubleValue), 2, accuracy: 0.5, "at the border of the late segment: \(stall)")
        let lasted = try XCTUnwrap(stall["endTimestamp"]?.doubleValue) - (try XCTUnwrap(stall["startTimestamp"]?.doubleValue))
        XCTAssertGreaterThan(lasted, 500, "the stall lasted while the segment was late: \(stall)")
        let reference = try await HLSReference.decoded(origin, variant: "a0", in: h)
        XCTAssertEqual(h.captured.count, reference.count, "nothing lost to the stall")
        // Every sample in order, the sound after the stall faded in (the player's soft start).
        let ramps = SoftStartRamps(captured: h.capturedSamples, decoded: StalledOutputTests.samples(reference), sampleRate: 44_100)
        XCTAssertNil(ramps.mismatch, "the capture is the decoded track but for the fade-in after the stall")
        XCTAssertEqual(ramps.starts.count, 1, "one fade-in, after the one stall: at \(ramps.startSeconds(sampleRate: 44_100)) s")
        let fadeIn = Double(try XCTUnwrap(ramps.starts.first)) / 44_100
        XCTAssertEqual(fadeIn, try XCTUnwrap(stall["assetPosition"]?.doubleValue), accuracy: 0.005, "where the sound was cut")
    }
}
