import Foundation
import Glibc
import Logging
import XCTest

@testable import ServiceKit

/// The group of a self-bound socket (who may connect) and the runtime dir a service creates.
final class SocketGroupTests: XCTestCase {
    func testSettingMeansDefaultNoneOrAName() {
        let choices = [nil, "", "apps"].map { SocketGroupChoice(setting: $0) }
        XCTAssertEqual(choices.map(\.name), ["cassette-clients", nil, "apps"])
        XCTAssertEqual(choices.map(\.explicit), [false, true, true])
    }

    func testFlagBeatsEnvironmentBeatsConfig() throws {
        let file = NSTemporaryDirectory() + "cfg-\(UUID().uuidString).json"
        try #"{"socketGroup":"fromconfig"}"#.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let fromConfig = try ServiceSettings.resolve(service: "player", options: CommonOptions.parse(["--config", file]), environment: [:])
        XCTAssertEqual(fromConfig.socketGroup.name, "fromconfig")
        XCTAssertTrue(fromConfig.config.unknownKeys.isEmpty)
        let fromEnv = try ServiceSettings.resolve(
            service: "player", options: CommonOptions.parse(["--config", file]),
            environment: ["CASSETTE_SOCKET_GROUP": "fromenv"])
        XCTAssertEqual(fromEnv.socketGroup.name, "fromenv")
        let fromFlag = try ServiceSettings.resolve(
            service: "player", options: CommonOptions.parse(["--config", file, "--socket-group", "fromflag"]),
            environment: ["CASSETTE_SOCKET_GROUP": "fromenv"])
        XCTAssertEqual(fromFlag.socketGroup.name, "fromflag")
    }

    func testANamedGroupMustExistButTheDefaultMayBeMissing() throws {
        XCTAssertThrowsError(try SocketGroupChoice(setting: "no-such-group-\(getpid())").resolve()) { error in
            XCTAssertEqual((error as? DaemonError)?.exitCode, 78)
        }
        var missingDefault = SocketGroupChoice(setting: nil)
        missingDefault.name = "no-such-group-\(getpid())"
        XCTAssertNil(try missingDefault.resolve())
        XCTAssertEqual(try SocketGroupChoice(setting: "root").resolve(), 0)
        XCTAssertNil(try SocketGroupChoice(setting: "").resolve())
    }

    /// A runtime dir the service creates is 0750, in the socket group, whatever the umask.
    func testARuntimeDirTheServiceCreatesIs0750InTheSocketGroupUnderUmask000() throws {
        try XCTSkipUnless(getuid() == 0, "only root may hand a folder to any group")
        let base = NSTemporaryDirectory() + "rt-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: base) }
        let audio = try XCTUnwrap(SocketGroupChoice.groupID(named: "audio"), "this test needs the audio group")
        let options = try CommonOptions.parse(["--runtime-dir", base + "/run", "--socket-group", "audio"])
        let settings = try ServiceSettings.resolve(service: "player", options: options, environment: [:])
        let saved = umask(0)
        defer { umask(saved) }
        let prepared = try SocketListener.prepare(settings: settings, logger: Logger(label: "test"))
        XCTAssertEqual(prepared.group, audio)
        for path in [base, base + "/run"] {
            var info = stat()
            XCTAssertEqual(stat(path, &info), 0)
            XCTAssertEqual(info.st_mode & 0o7777, 0o750, path)
            XCTAssertEqual(info.st_gid, audio, path)
        }
    }
}
