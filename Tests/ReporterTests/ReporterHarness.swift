import Foundation
import Glibc
import HTTPClient
import TestSupport
import Wire
import XCTest

/// A reference origin on a port chosen by the test, so that it can be stopped and started
/// again at the same address: "down, then up" as the reporter sees it.
final class PinnedOrigin: @unchecked Sendable {
    let port: Int
    let dataDirectory: URL
    private var process: Process?
    private let http = HTTPClient()

    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Picks a free port (nothing listens there until `start`).
    init() throws {
        port = try Self.freePort()
        dataDirectory = try OriginFixture.freshDataDirectory()
    }

    /// `faults` (`{"path","faults"}`, as `/_control/faults` takes them) are queued before the
    /// origin listens, so not even a client that is already knocking gets past them.
    func start(faults: [String: Any]? = nil) throws {
        let portFile = dataDirectory.appendingPathComponent("port")
        try? FileManager.default.removeItem(at: portFile)
        let process = Process()
        process.executableURL = try OriginFixture.binary()
        process.arguments = ["serve", "--data", dataDirectory.path, "--port", "\(port)", "--port-file", portFile.path]
        if let faults {
            process.arguments! += ["--faults", String(decoding: try JSONSerialization.data(withJSONObject: faults), as: UTF8.self)]
        }
        let log = dataDirectory.appendingPathComponent("origin.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        handle.seekToEndOfFile()
        process.standardOutput = handle
        process.standardError = handle
        process.environment = ProcessInfo.processInfo.environment.merging(
            ["CASSETTE_CLIENT_TOKEN": "demo", "CASSETTE_CLIENT_SECRET": "demo"]) { _, new in new }
        try process.run()
        self.process = process
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if (try? String(contentsOf: portFile, encoding: .utf8)) != nil { return }
            guard process.isRunning else { throw OriginTestError("origin exited: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")") }
            usleep(10_000)
        }
        throw OriginTestError("origin did not listen on \(port)")
    }

    func stop() {
        guard let process, process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    func discard() {
        stop()
        try? FileManager.default.removeItem(at: dataDirectory)
    }

    // MARK: Control API

    func control(_ method: String, _ path: String, _ body: Any? = nil) async throws -> [String: Any] {
        let bytes = try body.map { Array(try JSONSerialization.data(withJSONObject: $0)) }
        let response = try await http.send(
            HTTPRequest(
                method: method, url: baseURL + path,
                headers: ["Content-Type": "application/json"], body: bytes ?? [],
                timeoutSeconds: 15))
        guard (200..<300).contains(response.status),
            let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        else { throw OriginTestError("\(method) \(path): \(response.status) \(String(decoding: response.body, as: UTF8.self))") }
        return object
    }

    /// `plays` (or `consumption`) of `/_control/stats`: unique, received, duplicates, rejected, requests.
    func stats(_ log: String = "plays") async throws -> [String: Int] {
        let stats = try await control("GET", "/_control/stats")
        return (stats[log] as? [String: Any] ?? [:]).compactMapValues { ($0 as? NSNumber)?.intValue }
    }

    func injectFaults(_ prefix: String, _ faults: [[String: Any]]) async throws {
        _ = try await control("POST", "/_control/faults", ["path": prefix, "faults": faults])
    }

    func clearFaults() async throws {
        _ = try await control("DELETE", "/_control/faults")
    }

    private static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw OriginTestError("socket: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard ok else { throw OriginTestError("cannot find a free port: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// The real reporter binary in a test directory, pointed at an origin, with a `reporter`
/// config section; restartable over the same state directory.
final class ReporterUnderTest {
    let dir: TestDirectory
    let origin: String?
    let configPath: String
    /// The CPUs the reporter runs on (`taskset -c`); nil: all of them.
    let cores: String?
    private(set) var process: ServiceProcess?

    /// `topLevel`: more keys of the config file beside the `reporter` section (e.g. `originCAFile`).
    init(
        origin: String?, reporterConfig: [String: Any] = [:], topLevel: [String: Any] = [:], dir: TestDirectory? = nil,
        cores: String? = nil
    ) throws {
        self.dir = try dir ?? TestDirectory(prefix: "crp")
        self.origin = origin
        self.cores = cores
        let fields = topLevel.merging(["reporter": reporterConfig, "logLevel": "info"]) { $1 }
        let config = try JSONSerialization.data(withJSONObject: fields)
        configPath = try self.dir.writeConfig(String(decoding: config, as: UTF8.self))
    }

    @discardableResult
    func start() throws -> ServiceProcess {
        var args = ["--config", configPath]
        if let origin { args += ["--origin", origin] }
        let process = try ServiceProcess(
            "reporter", in: dir, extraArgs: args,
            environment: [
                "CASSETTE_CLIENT_TOKEN": "demo", "CASSETTE_CLIENT_SECRET": "demo",
                "CASSETTE_LOG_LEVEL": "info",
            ], cores: cores)
        try process.waitReady()
        self.process = process
        return process
    }

    func client() async throws -> RPCClient {
        guard let process else { throw OriginTestError("reporter not started") }
        return try await process.client()
    }

    func kill9() {
        process?.kill9()
        process = nil
    }

    func stop() {
        guard let process else { return }
        process.signal(SIGTERM)
        _ = try? process.waitExit()
        self.process = nil
    }

    var catalogPath: String { dir.stateDir + "/catalog.sqlite" }
}

/// Play events and consumption records as a player would send them.
enum Records {
    static func play(id: String = UUID().uuidString.lowercased(), product: String = "tr-9-01", padding: Int = 0) -> JSONValue {
        var event: [String: JSONValue] = [
            "eventId": .string(id), "productId": .string(product), "requestedProductId": .string(product),
            "stationId": "st-9", "playbackSessionId": .string(UUID().uuidString.lowercased()),
            "startedAt": "2026-11-21T10:00:00.000Z", "endedAt": "2026-11-21T10:03:00.000Z",
            "startPosition": 0, "endPosition": 180.5, "offline": true,
            "actions": [["actionType": "PLAYBACK_START", "assetPosition": 0, "timestamp": 1_763_719_200_000]],
        ]
        if padding > 0 { event["note"] = .string(String(repeating: "x", count: padding)) }
        return .object(event)
    }

    static func consumption(id: String = UUID().uuidString.lowercased(), product: String = "vid-1") -> JSONValue {
        ["recordId": .string(id), "productId": .string(product), "at": "2026-11-21T10:00:00Z", "start": 0, "end": 42.5]
    }

    /// Records `count` plays over `connections` connections, `perConnection` calls in flight on
    /// each; returns the ids. Every call must succeed.
    static func recordPlays(_ count: Int, into reporter: ReporterUnderTest, connections: Int = 8, perConnection: Int = 8) async throws -> [String] {
        let ids = (0..<count).map { _ in UUID().uuidString.lowercased() }
        var clients: [RPCClient] = []
        for _ in 0..<connections { clients.append(try await reporter.client()) }
        let workers = connections * perConnection
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<workers {
                let client = clients[worker % connections]
                group.addTask {
                    var index = worker
                    while index < ids.count {
                        let result = try await client.call("playlog.record", ["event": play(id: ids[index])], timeout: .seconds(60))
                        guard result["eventId"]?.stringValue == ids[index] else { throw OriginTestError("unexpected answer \(result)") }
                        index += workers
                    }
                }
            }
            try await group.waitForAll()
        }
        for client in clients { await client.close() }
        return ids
    }
}

extension XCTestCase {
    /// Polls `playlog.status` until `condition` holds (or fails after `timeout` seconds).
    func waitForStatus(
        _ reporter: ReporterUnderTest, timeout: Double = 60, _ what: String,
        _ condition: (JSONValue) -> Bool
    ) async throws -> JSONValue {
        let client = try await reporter.client()
        defer { Task { await client.close() } }
        let deadline = Date().addingTimeInterval(timeout)
        var last: JSONValue = .null
        while Date() < deadline {
            last = try await client.call("playlog.status")
            if condition(last) { return last }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        XCTFail("timed out waiting for \(what); last status: \(String(decoding: last.serialized(), as: UTF8.self))")
        return last
    }
}
