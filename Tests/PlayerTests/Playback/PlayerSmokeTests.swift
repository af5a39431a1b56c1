import Glibc
import TestSupport
import XCTest

/// The player starts, answers service.status over its socket and stops cleanly on SIGTERM.
final class PlayerSmokeTests: XCTestCase {
    func testStartsAnswersAndStops() async throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let service = try ServiceProcess("player", in: dir)
        try service.waitReady()
        let client = try await service.client()
        let status = try await client.call("service.status")
        XCTAssertEqual(status["service"]?.stringValue, "player")
        await client.close()
        service.signal(SIGTERM)
        XCTAssertEqual(try service.waitExit(), 0)
    }
}

/// The audio device and pacing come from the config file when their flags are absent, and the
/// flags win when given (flag → config → default).
final class PlayerAudioConfigTests: XCTestCase {
    func testAudioDeviceFromConfigAndFlagWins() async throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let config = try dir.writeConfig(#"{"player":{"audioDevice":"null","audioPace":"realtime"}}"#)
        for (args, device, pace) in [([String](), "null", "realtime"), (["--audio-device", "default", "--audio-pace", "device"], "default", "device")] {
            let player = try ServiceProcess("player", in: dir, extraArgs: ["--config", config] + args)
            try player.waitReady()
            let client = try await player.client()
            let status = try await client.call("service.status")
            XCTAssertEqual(status["audioDevice"]?.stringValue, device)
            XCTAssertEqual(status["audioPace"]?.stringValue, pace)
            await client.close()
            player.signal(SIGTERM)
            XCTAssertEqual(try player.waitExit(), 0, player.log)
        }
    }

    func testAnInvalidAudioPaceInTheConfigStopsTheStartWithConfigInvalid() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let config = try dir.writeConfig(#"{"player":{"audioPace":"fast"}}"#)
        let player = try ServiceProcess("player", in: dir, extraArgs: ["--config", config])
        XCTAssertEqual(try player.waitExit(), 78)
        XCTAssertTrue(player.log.contains("player.audioPace"), player.log)
    }
}
