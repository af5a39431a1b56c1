import Foundation
import TestSupport
import Wire
import XCTest

/// `output.underruns` in `player.status` counts the underruns the output recovered from, through
/// a real ALSA plugin: `cassette_underrun` (Tests/ALSAUnderrunPlugin, an ioplug PCM that takes
/// everything at once and underruns exactly once, after a second of frames), under a `file` PCM
/// that captures what it is given.
final class UnderrunCountTests: XCTestCase {
    func testAnUnderrunIsRecoveredAndCounted() async throws {
        let plugin = Binaries.directory + "/libCassetteUnderrunPCM.so"
        guard FileManager.default.fileExists(atPath: plugin) else {
            return XCTFail("\(plugin) is missing: `swift build --build-tests` builds it")
        }
        let h = try PlayerHarness()
        let track = try h.makeTrack("ur-a", seconds: 3, frequency: 440)
        try h.addProduct("ur-a", file: track, seconds: 3)
        let alsa = try LateALSAConfig(dir: h.dir.path)
        try alsa.define(
            """
            pcm_type.cassette_underrun { lib "\(plugin)" }
            pcm.underrun_capture {
                type file
                slave.pcm { type cassette_underrun underrunAfter 44100 }
                file "\(h.capturePath)"
                format "raw"
            }
            """)
        let client = try await h.start(environment: alsa.environment, device: "underrun_capture")
        let log = EventLog(client)
        let before = try await h.status()
        XCTAssertEqual(before["output"]?["underruns"], 0, "\(before)")

        _ = try await h.call("player.load", PlayerHarness.product("ur-a"))
        _ = try await h.call("player.play")
        let events = try await log.untilState("IDLE", timeout: 30)
        XCTAssertFalse(
            events.contains { ["OutputUnavailable", "OutputFailed"].contains($0.type) },
            "an underrun is recovered in place: \(events.map(EventLog.describe))")
        let after = try await h.status()
        XCTAssertEqual(after["output"]?["underruns"], 1, "the one underrun is counted: \(after["output"] ?? .null)")
        let expected = try h.decoded(track)
        XCTAssertEqual(h.captured.count, expected.count, "the whole track was played")
        XCTAssertTrue(h.captured == expected, "nothing lost or repeated by the recovery")
        await h.stop()
    }
}
