import Foundation
import Glibc
import TestSupport
import Wire
import XCTest

/// libcurl is opened by a daemon's first transfer instead of being linked (Shared/CCurl/loader.c):
/// no binary names it, an idle daemon has not mapped it, the first transfer maps it, and a device
/// without it gets a named error rather than a crash.
final class LazyCurlTests: XCTestCase {
    var dir: TestDirectory!

    override func setUpWithError() throws { dir = try TestDirectory() }
    override func tearDown() { dir?.remove() }

    /// An address where nothing listens: transfers to it fail at connect.
    static let deadOrigin = "http://127.0.0.1:9"

    func testNoBinaryLinksLibcurl() throws {
        for name in ["downloader", "player", "reporter", "cassettectl", "cassette-origin"] {
            let dynamic = try Self.output(of: "/usr/bin/readelf", ["-d", Binaries.path(name)])
            XCTAssertTrue(dynamic.contains("(NEEDED)"), "\(name): readelf showed no dynamic section:\n\(dynamic)")
            XCTAssertFalse(dynamic.contains("libcurl"), "\(name) links libcurl:\n\(dynamic)")
        }
    }

    /// A daemon that has sent nothing has not mapped libcurl. The reporter has an origin but no
    /// plays to deliver; the downloader and the player get none, since with one they talk to it
    /// at start (the catalog refresh and the offline extension; the look at the origin).
    func testIdleDaemonsHaveNotOpenedLibcurl() async throws {
        for (name, args) in [("reporter", ["--origin", Self.deadOrigin]), ("downloader", []), ("player", [])] {
            let service = try ServiceProcess(name, in: dir, extraArgs: args)
            defer { service.kill9() }
            try service.waitReady()
            let client = try await service.client()
            _ = try await client.call("service.status")
            await client.close()
            let mapped = try Self.mappedLibraries(service.pid)
            XCTAssertTrue(mapped.contains { $0.contains("libsqlite3") }, "\(name)'s maps were not read: \(mapped)")
            XCTAssertEqual(mapped.filter { $0.contains("libcurl") }, [], "\(name) mapped libcurl before any transfer")
        }
    }

    /// The player's first look at the origin is its first transfer: libcurl is mapped then, and
    /// the refused connection leaves the daemon answering.
    func testFirstTransferOpensLibcurl() async throws {
        let service = try ServiceProcess("player", in: dir, extraArgs: ["--origin", Self.deadOrigin])
        defer { service.kill9() }
        try service.waitReady()
        let deadline = Date().addingTimeInterval(20)
        while try !Self.mappedLibraries(service.pid).contains(where: { $0.contains("libcurl") }) {
            guard Date() < deadline else { return XCTFail("the player never opened libcurl:\n\(service.log)") }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        let client = try await service.client()
        let status = try await client.call("service.status")
        XCTAssertEqual(status["service"]?.stringValue, "player")
        await client.close()
    }

    /// A device without libcurl: the downloader starts, a sync fails with the transport error
    /// named `HTTPLibraryMissing`, and the daemon goes on answering. libcurl is hidden from the
    /// daemon alone by mounting /dev/null over it in a private mount namespace (root only).
    func testMissingLibcurlIsANamedError() async throws {
        let library = try Self.libcurlPath()
        guard (try? Self.output(of: "/usr/bin/unshare", ["-m", "/bin/sh", "-c", "mount --bind /dev/null \(library)"])) != nil else {
            throw XCTSkip("needs a private mount namespace (root) to hide \(library)")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        process.arguments = [
            "-m", "/bin/sh", "-c", "mount --bind /dev/null \"$0\" && exec \"$@\"", library,
            Binaries.path("downloader"), "--runtime-dir", dir.runtimeDir, "--state-dir", dir.stateDir,
            "--origin", Self.deadOrigin, "--socket-group", "",
        ]
        let log = dir.path + "/downloader-without-curl.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        defer {
            process.terminate()
            process.waitUntilExit()
        }
        let socket = dir.socketPath("downloader")
        let deadline = Date().addingTimeInterval(20)
        while UnixSocketProbe.status(of: socket) != .live {
            guard process.isRunning, Date() < deadline else {
                return XCTFail("the downloader did not start:\n\((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
            }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        let client = try await RPCClient.connect(path: socket)
        do {
            _ = try await client.call("stations.sync", ["stationId": "st-9"])
            XCTFail("a sync without libcurl succeeded")
        } catch let error as RPCError {
            XCTAssertEqual(error.details["transportError"]?.stringValue, "HTTPLibraryMissing", "\(error)")
            XCTAssertTrue(error.message.contains("libcurl"), error.message)
        }
        let status = try await client.call("service.status")
        XCTAssertEqual(status["service"]?.stringValue, "downloader")
        await client.close()
        XCTAssertTrue(process.isRunning)
    }

    // MARK: Helpers

    /// The shared objects in /proc/PID/maps.
    static func mappedLibraries(_ pid: pid_t) throws -> Set<String> {
        let maps = try readProcFile("/proc/\(pid)/maps")
        return Set(
            maps.split(separator: "\n").compactMap { line in
                line.split(separator: " ", omittingEmptySubsequences: true).dropFirst(5).first.map(String.init)
            }.filter { $0.contains(".so") })
    }

    /// The file the dynamic loader opens for libcurl.so.4: this test process opens it and reads
    /// its own maps.
    static func libcurlPath() throws -> String {
        guard dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL) != nil else { throw XCTSkip("no libcurl.so.4 here") }
        guard let path = try mappedLibraries(getpid()).first(where: { $0.contains("/libcurl.so") }) else {
            throw XCTSkip("libcurl.so.4 opened but not found in /proc/self/maps")
        }
        return path
    }

    static func output(of executable: String, _ arguments: [String]) throws -> String {
        let run = try Command.run(executable, arguments)
        guard run.status == 0 else {
            throw NSError(
                domain: "LazyCurlTests", code: Int(run.status),
                userInfo: [NSLocalizedDescriptionKey: "\(executable) \(arguments): \(run.output)"])
        }
        return run.output
    }
}
