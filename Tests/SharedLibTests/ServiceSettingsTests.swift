import Foundation
import XCTest

@testable import ServiceKit

final class ServiceSettingsTests: XCTestCase {
    func testFlagBeatsEnvironmentBeatsConfigBeatsDefault() throws {
        let file = NSTemporaryDirectory() + "cfg-\(UUID().uuidString).json"
        try #"{"runtimeDir":"/cfg/run","stateDir":"/cfg/state","origin":"http://cfg","clientToken":"t","clientSecret":"s","wire":{"maxFrameBytes":4096}}"#
            .write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let options = try CommonOptions.parse(["--config", file, "--runtime-dir", "/flag/run"])
        let env = ["CASSETTE_RUNTIME_DIR": "/env/run", "CASSETTE_STATE_DIR": "/env/state", "CASSETTE_CLIENT_SECRET": "envsecret"]
        let s = try ServiceSettings.resolve(service: "player", options: options, environment: env)
        XCTAssertEqual(s.runtimeDir, "/flag/run")
        XCTAssertEqual(s.socketPath, "/flag/run/player.sock")
        XCTAssertEqual(s.stateDir, "/env/state")
        XCTAssertEqual(s.origin, "http://cfg")
        XCTAssertEqual(s.clientToken, "t")
        XCTAssertEqual(s.clientSecret, "envsecret")
        XCTAssertEqual(s.limits.maxFrameBytes, 4096)
        XCTAssertEqual(s.limits.idleTimeoutSeconds, 30, "unset limits keep their defaults")
    }

    func testDefaultsWithoutAnything() throws {
        let s = try ServiceSettings.resolve(service: "reporter", options: CommonOptions.parse([]), environment: [:])
        XCTAssertEqual(s.socketPath, "/run/cassette/reporter.sock")
        XCTAssertEqual(s.stateDir, "/var/lib/cassette")
        XCTAssertEqual(s.limits.maxFrameBytes, 1_048_576)
    }

    func testSocketPathTooLongForSockaddrIsAConfigError() throws {
        let options = try CommonOptions.parse(["--runtime-dir", "/" + String(repeating: "d", count: 120)])
        XCTAssertThrowsError(try ServiceSettings.resolve(service: "player", options: options, environment: [:])) { error in
            XCTAssertEqual((error as? DaemonError)?.code, .configInvalid)
            XCTAssertEqual((error as? DaemonError)?.exitCode, 78)
        }
    }

    func testMissingConfigFileIsAConfigError() throws {
        let options = try CommonOptions.parse(["--config", "/nonexistent/cassette.json"])
        XCTAssertThrowsError(try ServiceSettings.resolve(service: "player", options: options, environment: [:]))
    }
}

extension ServiceSettingsTests {
    func testUselessWireLimitsAreRefusedAtStart() throws {
        let file = NSTemporaryDirectory() + "cfg-\(UUID().uuidString).json"
        try #"{"wire":{"maxInFlightPerConnection":0,"maxFrameBytes":10}}"#.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let options = try CommonOptions.parse(["--config", file])
        XCTAssertThrowsError(try ServiceSettings.resolve(service: "player", options: options, environment: [:])) { error in
            let message = (error as? DaemonError)?.message ?? ""
            XCTAssertTrue(message.contains("maxInFlightPerConnection") && message.contains("maxFrameBytes"), message)
        }
    }
}

extension ServiceSettingsTests {
    func testMisspeltConfigKeysAreReported() throws {
        let file = NSTemporaryDirectory() + "cfg-\(UUID().uuidString).json"
        try #"{"orign":"http://x","wire":{"maxFrameByte":5000,"eventBacklog":8}}"#.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let s = try ServiceSettings.resolve(service: "player", options: CommonOptions.parse(["--config", file]), environment: [:])
        XCTAssertEqual(s.config.unknownKeys, ["orign", "wire.maxFrameByte"])
        XCTAssertEqual(s.limits.eventBacklog, 8)
    }
}

extension ServiceSettingsTests {
    func testMisspeltKeysInAServiceSectionAreReportedForThatSection() throws {
        let file = NSTemporaryDirectory() + "cfg-\(UUID().uuidString).json"
        try #"{"player":{"audioDevic":"null","audioPace":"realtime"},"downloader":{"maxParalel":2}}"#
            .write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let s = try ServiceSettings.resolve(service: "player", options: CommonOptions.parse(["--config", file]), environment: [:])
        XCTAssertEqual(s.config.unknownKeys, [])
        XCTAssertEqual(s.config.unknownKeys(inSection: "player", known: ["audioDevice", "audioPace"]), ["player.audioDevic"])
        XCTAssertEqual(s.config.unknownKeys(inSection: "downloader", known: ["maxParallel"]), ["downloader.maxParalel"])
        XCTAssertEqual(s.config.unknownKeys(inSection: "reporter", known: []), [])
    }
}

extension ServiceSettingsTests {
    func testOriginTransportKeysAreReadAndCheckedAtStart() throws {
        let folder = NSTemporaryDirectory() + "cfg-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let ca = folder + "/ca.pem"
        try "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n".write(toFile: ca, atomically: true, encoding: .utf8)
        let pin = "sha256//" + Data(repeating: 9, count: 32).base64EncodedString()
        func resolve(_ json: String) throws -> ServiceSettings {
            let file = folder + "/cassette.json"
            try json.write(toFile: file, atomically: true, encoding: .utf8)
            return try ServiceSettings.resolve(service: "downloader", options: CommonOptions.parse(["--config", file]), environment: [:])
        }
        let good = try resolve(#"{"originCAFile":"\#(ca)","originPinnedPublicKey":"\#(pin)","originProxy":"socks5h://127.0.0.1:1080"}"#)
        XCTAssertEqual(good.originTransport.caFile, ca)
        XCTAssertEqual(good.originTransport.pinnedPublicKey, pin)
        XCTAssertEqual(good.originTransport.proxy, "socks5h://127.0.0.1:1080")
        XCTAssertEqual(good.config.unknownKeys, [], "the transport keys are known")
        XCTAssertEqual(try resolve("{}").originTransport, .init(), "without them: the system's store, no pin, the environment's proxy")

        for (json, key) in [
            (#"{"originCAFile":"\#(folder)/missing.pem"}"#, "originCAFile"),
            (#"{"originPinnedPublicKey":"pin-sha256:abc"}"#, "originPinnedPublicKey"),
            (#"{"originProxy":"proxy.example:3128"}"#, "originProxy"),
        ] {
            XCTAssertThrowsError(try resolve(json), key) { error in
                XCTAssertEqual((error as? DaemonError)?.code, .configInvalid, key)
                XCTAssertEqual((error as? DaemonError)?.exitCode, 78, key)
                XCTAssertTrue((error as? DaemonError)?.message.contains(key) == true, "\(error)")
            }
        }
    }
}
