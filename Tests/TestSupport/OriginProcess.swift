import Foundation
import HTTPClient

/// A real `cassette-origin serve` process in its own temporary data directory, reached over
/// loopback, as the services and acceptance tests would see it.
public final class OriginProcess: @unchecked Sendable {
    public let dataDirectory: URL
    public let port: Int
    private let process: Process

    public var baseURL: String { "http://127.0.0.1:\(port)" }

    private init(dataDirectory: URL, port: Int, process: Process) {
        self.dataDirectory = dataDirectory
        self.port = port
        self.process = process
    }

    /// Starts an origin on a fresh copy of the shared test catalog (or on `reusing`, to
    /// restart over an existing data directory) and waits until it has written its port.
    /// `synthetic` specs (`ID=COUNTxSIZE`, docs/origin.md) make it serve a synthetic catalog,
    /// generated into a new data directory instead of the shared one.
    /// `arguments` go to `serve` as they are (e.g. `--heartbeat-seconds 1`).
    public static func start(reusing directory: URL? = nil, synthetic: [String] = [], arguments: [String] = []) throws -> OriginProcess {
        let dataDirectory = try directory ?? (synthetic.isEmpty ? OriginFixture.freshDataDirectory() : OriginFixture.emptyDataDirectory())
        let portFile = dataDirectory.appendingPathComponent("port")
        try? FileManager.default.removeItem(at: portFile)
        let process = Process()
        process.executableURL = try OriginFixture.binary()
        process.arguments =
            ["serve", "--data", dataDirectory.path, "--port", "0", "--port-file", portFile.path]
            + synthetic.flatMap { ["--synthetic", $0] } + arguments
        process.standardOutput = try logHandle(dataDirectory.appendingPathComponent("origin.out"))
        process.standardError = try logHandle(dataDirectory.appendingPathComponent("origin.err"))
        try process.run()
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if let text = try? String(contentsOf: portFile, encoding: .utf8),
                let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
            {
                return OriginProcess(dataDirectory: dataDirectory, port: port, process: process)
            }
            guard process.isRunning else {
                let log = (try? String(contentsOf: dataDirectory.appendingPathComponent("origin.err"), encoding: .utf8)) ?? ""
                throw OriginTestError("origin exited with \(process.terminationStatus) before listening: \(log)")
            }
            usleep(20_000)
        }
        process.terminate()
        throw OriginTestError("origin did not write \(portFile.path) within 60 s")
    }

    /// Sends SIGTERM and waits; returns the exit status.
    @discardableResult
    public func stop() -> Int32 {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Stops the process and deletes its data directory.
    public func discard() {
        stop()
        try? FileManager.default.removeItem(at: dataDirectory)
    }

    private static func logHandle(_ url: URL) throws -> FileHandle {
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        return try FileHandle(forWritingTo: url)
    }
}

public struct OriginTestError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// The catalog every test shares: generated once per test run (small: 3 tracks of 2–5 s per
/// station) and copied into each origin's data directory, so tests stay isolated and fast.
public enum OriginFixture {
    private static let root: URL = {
        let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("cot-\(getpid())")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("cot-\(getpid())").path) }
        return url
    }()

    private static let catalog: Result<URL, any Error> = Result {
        let directory = root.appendingPathComponent("catalog")
        let process = Process()
        process.executableURL = try binary()
        process.arguments = ["generate", "--out", directory.path, "--tracks-per-station", "3", "--seconds", "2"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw OriginTestError("cassette-origin generate exited with \(process.terminationStatus)")
        }
        return directory
    }

    /// The generated catalog directory (generating it on first use).
    public static func catalogDirectory() throws -> URL {
        try catalog.get()
    }

    /// A new data directory holding a copy of the shared catalog.
    public static func freshDataDirectory() throws -> URL {
        let source = try catalogDirectory()
        let target = root.appendingPathComponent("data-" + UUID().uuidString.prefix(8).lowercased())
        try FileManager.default.copyItem(at: source, to: target)
        return target
    }

    /// A new data directory holding a copy of a catalog generated with `arguments`
    /// (`cassette-origin generate` options such as `--seconds 6`), generated once per test run
    /// for each set of arguments: for tests that need longer content than the shared catalog's.
    public static func freshDataDirectory(generatedWith arguments: [String]) throws -> URL {
        let source = try GeneratedCatalogs.shared.directory(for: arguments, root: root)
        let target = root.appendingPathComponent("data-" + UUID().uuidString.prefix(8).lowercased())
        try FileManager.default.copyItem(at: source, to: target)
        return target
    }

    /// A new, empty data directory (for an origin that generates its own catalog).
    public static func emptyDataDirectory() throws -> URL {
        let target = root.appendingPathComponent("data-" + UUID().uuidString.prefix(8).lowercased())
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        return target
    }

    /// The built `cassette-origin`: `CASSETTE_BIN_DIR`, else next to the test bundle.
    public static func binary() throws -> URL {
        var candidates: [URL] = []
        if let directory = ProcessInfo.processInfo.environment["CASSETTE_BIN_DIR"] {
            candidates.append(URL(fileURLWithPath: directory))
        }
        let bundle = Bundle.main.bundleURL
        candidates += [bundle, bundle.deletingLastPathComponent()]
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        candidates += [executable.deletingLastPathComponent(), executable.deletingLastPathComponent().deletingLastPathComponent()]
        for directory in candidates {
            let url = directory.appendingPathComponent("cassette-origin")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        throw OriginTestError("cassette-origin not found in \(candidates.map(\.path)); build it or set CASSETTE_BIN_DIR")
    }
}

/// Requests against one origin, with JSON helpers that parse with Foundation (independently
/// of the origin's own JSON code).
public struct OriginAPI: Sendable {
    public let origin: OriginProcess
    public let client = HTTPClient(credentials: BasicCredentials(token: "demo", secret: "demo"))
    public let anonymous = HTTPClient()

    public init(origin: OriginProcess) { self.origin = origin }

    public func get(_ path: String, headers: [String: String] = [:], authorized: Bool = true) async throws -> HTTPResponse {
        try await (authorized ? client : anonymous).send(
            HTTPRequest(method: "GET", url: origin.baseURL + path, headers: headers, timeoutSeconds: 15))
    }

    public func post(_ path: String, _ body: Any, authorized: Bool = true) async throws -> HTTPResponse {
        let data = try JSONSerialization.data(withJSONObject: body)
        return try await postRaw(path, Array(data), authorized: authorized)
    }

    public func postRaw(_ path: String, _ body: [UInt8], authorized: Bool = true) async throws -> HTTPResponse {
        try await (authorized ? client : anonymous).send(
            HTTPRequest(
                method: "POST", url: origin.baseURL + path, headers: ["Content-Type": "application/json"],
                body: body, timeoutSeconds: 15))
    }

    public func delete(_ path: String) async throws -> HTTPResponse {
        try await anonymous.send(HTTPRequest(method: "DELETE", url: origin.baseURL + path, timeoutSeconds: 15))
    }

    /// Queues faults for requests whose path starts with `prefix`.
    public func injectFaults(_ prefix: String, _ faults: [[String: Any]]) async throws {
        let response = try await post("/_control/faults", ["path": prefix, "faults": faults], authorized: false)
        guard response.status == 200 else {
            throw OriginTestError("faults for \(prefix) refused: \(response.status) \(String(decoding: response.body, as: UTF8.self))")
        }
    }

    public func stats() async throws -> [String: Any] {
        try json(try await get("/_control/stats", authorized: false))
    }

    /// Who holds the streaming privilege (`/_control/streaming`).
    public func streaming() async throws -> [String: Any] {
        try json(try await get("/_control/streaming", authorized: false)).object("streaming")
    }

    /// Another device of the account starts streaming (`/_control/takeover`).
    public func takeOverStreaming(deviceName: String) async throws {
        let response = try await post("/_control/takeover", ["deviceName": deviceName], authorized: false)
        guard response.status == 200 else { throw OriginTestError("takeover refused: \(response.status)") }
    }

    public func json(_ response: HTTPResponse) throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any] else {
            throw OriginTestError("not a JSON object: \(String(decoding: response.body, as: UTF8.self))")
        }
        return object
    }
}

extension Dictionary where Key == String, Value == Any {
    public func object(_ key: String) -> [String: Any] { self[key] as? [String: Any] ?? [:] }
    public func objects(_ key: String) -> [[String: Any]] { self[key] as? [[String: Any]] ?? [] }
    public func strings(_ key: String) -> [String] { self[key] as? [String] ?? [] }
    public func int(_ key: String) -> Int? { (self[key] as? NSNumber)?.intValue }
    public func string(_ key: String) -> String? { self[key] as? String }
}

/// Parses RFC 3339 timestamps as the origin writes them (with or without fractions).
public func parseServerTime(_ text: String?) -> Date? {
    guard let text else { return nil }
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    if let date = formatter.date(from: text) { return date }
    formatter.formatOptions = [.withInternetDateTime]
    return formatter.date(from: text)
}

/// Catalogs generated with other options than the shared one, each once, by argument list.
private final class GeneratedCatalogs: @unchecked Sendable {
    static let shared = GeneratedCatalogs()
    private let lock = NSLock()
    private var made: [[String]: URL] = [:]

    func directory(for arguments: [String], root: URL) throws -> URL {
        // Held while generating: a second test asking for the same catalog waits for it.
        lock.lock()
        defer { lock.unlock() }
        if let url = made[arguments] { return url }
        let directory = root.appendingPathComponent("catalog-" + UUID().uuidString.prefix(8).lowercased())
        let process = Process()
        process.executableURL = try OriginFixture.binary()
        process.arguments = ["generate", "--out", directory.path] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw OriginTestError("cassette-origin generate \(arguments) exited with \(process.terminationStatus)")
        }
        made[arguments] = directory
        return directory
    }
}
