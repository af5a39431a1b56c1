import Foundation
import Glibc
import StateDB
import TestSupport
import Wire
import XCTest

/// Start, readiness, activation, SIGTERM, kill -9 and restart of the real binaries.
final class LifecycleTests: XCTestCase {
    var dir: TestDirectory!

    override func setUpWithError() throws { dir = try TestDirectory() }
    override func tearDown() { dir?.remove() }

    func testSelfBoundServiceSignalsReadyAndListensWithMode0660() async throws {
        for name in ["downloader", "player", "reporter"] {
            let service = try ServiceProcess(name, in: dir)
            defer { service.kill9() }
            try service.waitReady()
            // READY=1 comes after listen: the socket answers straight away.
            XCTAssertEqual(UnixSocketProbe.status(of: service.socketPath), .live)
            let attrs = try FileManager.default.attributesOfItem(atPath: service.socketPath)
            XCTAssertEqual((attrs[.posixPermissions] as? NSNumber)?.intValue, 0o660, name)
            let client = try await service.client()
            let status = try await client.call("service.status")
            XCTAssertEqual(status["service"]?.stringValue, name)
            XCTAssertEqual(status["pid"]?.intValue, Int(service.pid))
            XCTAssertEqual(status["version"]?.stringValue?.isEmpty, false)
            XCTAssertNotNil(status["uptimeSeconds"]?.doubleValue)
            await client.close()
        }
    }

    func testSigtermExitsZeroAndRemovesItsOwnSocket() throws {
        let service = try ServiceProcess("reporter", in: dir)
        try service.waitReady()
        service.signal(SIGTERM)
        XCTAssertEqual(try service.waitExit(), 0, service.log)
        XCTAssertTrue(service.notify.wait(for: "STOPPING=1", timeout: 2))
        XCTAssertEqual(UnixSocketProbe.status(of: service.socketPath), .missing)
    }

    func testStaleSocketIsReplacedAfterKill9() async throws {
        let first = try ServiceProcess("downloader", in: dir)
        try first.waitReady()
        first.kill9()
        XCTAssertEqual(UnixSocketProbe.status(of: first.socketPath), .stale, "kill -9 should leave the socket file behind")
        let second = try ServiceProcess("downloader", in: dir)
        defer { second.kill9() }
        try second.waitReady()
        let client = try await second.client()
        let status = try await client.call("service.status")
        XCTAssertEqual(status["pid"]?.intValue, Int(second.pid))
        XCTAssertEqual(status["catalog"]?["schemaVersion"]?.intValue, StateDB.knownMigrations.count)
        await client.close()
    }

    func testSecondInstanceRefusesToStartWhileTheFirstAnswers() throws {
        let first = try ServiceProcess("player", in: dir)
        defer { first.kill9() }
        try first.waitReady()
        let second = try ServiceProcess("player", in: dir)
        XCTAssertEqual(try second.waitExit(), 75, second.log)
        XCTAssertTrue(second.log.contains("AlreadyRunning"), second.log)
        // The first instance is untouched.
        let raw = try first.raw()
        try raw.send(RawSocket.request(id: 1, method: "service.status"))
        XCTAssertEqual(try raw.readFrame()?["result"]?["pid"]?.intValue, Int(first.pid))
    }

    func testRefusesAPathThatIsNotASocket() throws {
        try FileManager.default.createDirectory(atPath: dir.runtimeDir, withIntermediateDirectories: true)
        try "not a socket".write(toFile: dir.socketPath("player"), atomically: true, encoding: .utf8)
        let service = try ServiceProcess("player", in: dir)
        XCTAssertEqual(try service.waitExit(), 71, service.log)
        XCTAssertEqual(try String(contentsOfFile: dir.socketPath("player"), encoding: .utf8), "not a socket")
    }

    func testBadConfigFileExitsWithConfigError() throws {
        let config = try dir.writeConfig("{ not json")
        let service = try ServiceProcess("reporter", in: dir, extraArgs: ["--config", config])
        XCTAssertEqual(try service.waitExit(), 78, service.log)
        XCTAssertTrue(service.log.contains("ConfigInvalid"), service.log)
    }

    func testSocketActivatedServiceAnswersFirstConnectionAndSignalsReady() async throws {
        for name in ["downloader", "player", "reporter"] {
            let service = try ServiceProcess(name, in: dir, launch: .socketActivated)
            defer { service.kill9() }
            try service.waitForSocket()
            // The first connection makes systemd-socket-activate exec the service in its place.
            let raw = try service.raw()
            try raw.send(RawSocket.request(id: 1, method: "service.status"))
            let status = try XCTUnwrap(try raw.readFrame(timeout: 20), service.log)
            XCTAssertEqual(status["result"]?["service"]?.stringValue, name)
            XCTAssertEqual(status["result"]?["pid"]?.intValue, Int(service.pid), "service should run in the activator's place")
            try service.waitReady()
            XCTAssertTrue(service.log.contains("inherited"), "expected the inherited socket to be used:\n\(service.log)")
        }
    }

    func testSigtermOfActivatedServiceLeavesTheSocketPathAlone() throws {
        let service = try ServiceProcess("player", in: dir, launch: .socketActivated)
        try service.waitForSocket()
        let raw = try service.raw()
        try raw.send(RawSocket.request(id: 1, method: "service.status"))
        XCTAssertNotNil(try raw.readFrame(timeout: 20))
        try service.waitReady()
        service.signal(SIGTERM)
        XCTAssertEqual(try service.waitExit(), 0, service.log)
        var st = stat()
        XCTAssertEqual(lstat(service.socketPath, &st), 0, "the activated socket's path was removed")
        XCTAssertEqual(st.st_mode & S_IFMT, S_IFSOCK)
    }

    func testThreeServicesStartedTogetherOnAFreshStateDirAgreeOnOneSchema() async throws {
        for round in 0..<5 {
            let fresh = try TestDirectory()
            defer { fresh.remove() }
            let services = try ["downloader", "player", "reporter"].map { try ServiceProcess($0, in: fresh) }
            defer { services.forEach { $0.kill9() } }
            for service in services { try service.waitReady() }
            for service in services {
                let client = try await service.client()
                let status = try await client.call("service.status", timeout: .seconds(20))
                XCTAssertEqual(status["catalog"]?["state"], "ready", "round \(round): \(service.log)")
                XCTAssertEqual(status["catalog"]?["schemaVersion"]?.intValue, StateDB.knownMigrations.count, "round \(round)")
                await client.close()
            }
            let catalog = try CatalogProbe(path: fresh.stateDir + "/catalog.sqlite")
            XCTAssertEqual(try catalog.journalMode(), "wal")
            XCTAssertEqual(try catalog.appliedMigrations(), StateDB.knownMigrations)
            XCTAssertEqual(try catalog.integrityCheck(), "ok")
        }
    }

    func testRestartAfterKill9KeepsTheCatalog() async throws {
        let first = try ServiceProcess("reporter", in: dir)
        try first.waitReady()
        var client = try await first.client()
        _ = try await client.call("service.status") // opens the catalog
        await client.close()
        try CatalogProbe(path: dir.stateDir + "/catalog.sqlite")
            .execute("INSERT INTO settings(key, value, updatedAt) VALUES ('probe', '\"kept\"', CURRENT_TIMESTAMP)")
        first.kill9()
        let second = try ServiceProcess("reporter", in: dir)
        defer { second.kill9() }
        try second.waitReady()
        client = try await second.client()
        let status = try await client.call("service.status")
        XCTAssertEqual(status["catalog"]?["schemaVersion"]?.intValue, StateDB.knownMigrations.count)
        await client.close()
        XCTAssertEqual(try CatalogProbe(path: dir.stateDir + "/catalog.sqlite").setting("probe"), "\"kept\"")
    }
}
