import Foundation
import Glibc
import TestSupport
import Wire
import XCTest

/// One origin plus one downloader state directory, restartable (kill -9 included), with the
/// helpers the socket-level tests share.
final class DownloaderHarness {
    let dir: TestDirectory
    private(set) var origin: OriginProcess
    private(set) var api: OriginAPI
    var service: ServiceProcess?
    private(set) var config: String?
    /// The CPUs the downloader runs on (`taskset -c`); nil: all of them.
    var cores: String?
    /// The origin URL the downloader is started with, when not the origin's own (an edge in front of it).
    var originURL: String?
    /// Environment variables the next `start` adds (e.g. `https_proxy`).
    var environment: [String: String] = [:]

    /// `synthetic`: the origin serves these synthetic stations (`ID=COUNTxSIZE`) instead of the demo catalog.
    init(config: String? = nil, synthetic: [String] = []) throws {
        let dir = try TestDirectory(prefix: "cdl")
        self.dir = dir
        let origin = try OriginProcess.start(synthetic: synthetic)
        self.origin = origin
        api = OriginAPI(origin: origin)
        self.config = try config.map { try dir.writeConfig($0) }
    }

    var mediaDir: String { dir.stateDir + "/media" }

    /// Writes the config file the next `start` uses.
    func setConfig(_ json: String) throws {
        config = try dir.writeConfig(json)
    }

    @discardableResult
    func start() throws -> ServiceProcess {
        var args = ["--origin", originURL ?? origin.baseURL]
        if let config { args += ["--config", config] }
        let credentials = ["CASSETTE_CLIENT_TOKEN": "demo", "CASSETTE_CLIENT_SECRET": "demo"]
        let service = try ServiceProcess(
            "downloader", in: dir, extraArgs: args,
            environment: credentials.merging(environment) { $1 }, cores: cores)
        try service.waitReady()
        self.service = service
        return service
    }

    func client() async throws -> RPCClient {
        guard let service else { throw OriginTestError("downloader not started") }
        return try await service.client()
    }

    func call(_ method: String, _ params: JSONValue = .object([:])) async throws -> JSONValue {
        let client = try await client()
        defer { Task { await client.close() } }
        return try await client.call(method, params)
    }

    func stop() throws {
        service?.signal(SIGTERM)
        _ = try service?.waitExit()
        service = nil
    }

    func kill9() {
        service?.kill9()
        service = nil
    }

    /// Starts the downloader on the cores `setting` names (checked), online over Wi-Fi.
    @discardableResult
    func startOnline(on setting: CoreSetting) async throws -> ServiceProcess {
        cores = setting.cores
        let service = try start()
        XCTAssertTrue(setting.confines(service.pid), "not pinned to CPU \(setting.cores ?? "")")
        _ = try await call("network.set", ["type": "wifi"])
        return service
    }

    /// The origin moves to another address: stopped, then started again on its data directory
    /// (a new port). A downloader started after this is configured with the new address.
    func moveOrigin() throws {
        origin.stop()
        origin = try OriginProcess.start(reusing: origin.dataDirectory)
        api = OriginAPI(origin: origin)
    }

    func discard() {
        kill9()
        origin.discard()
        dir.remove()
    }

    /// The origin's manifest for a station as a fresh device would get it: id → (url, sha256, size).
    func manifest(_ station: String) async throws -> [String: (url: String, sha256: String, size: Int)] {
        let answer = try api.json(try await api.post("/v1/stations/\(station)/offline", ["targetMinutes": NSNull(), "have": [String](), "played": [String]()]))
        var result: [String: (url: String, sha256: String, size: Int)] = [:]
        for item in answer.objects("items") {
            result[item.string("id")!] = (item.string("url")!, item.string("sha256")!, item.int("sizeBytes")!)
        }
        return result
    }

    /// Waits until `stations.list` shows every item of `station` verified.
    func waitStationComplete(_ station: String, timeout: Double = 60) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let list = try? await call("stations.list"),
                let entry = list["localOffline"]?.arrayValue?.first(where: { $0["id"]?.stringValue == station }),
                let items = entry["itemCount"]?.intValue, items > 0, entry["verifiedCount"]?.intValue == items
            {
                return
            }
            try await Task.sleep(nanoseconds: 200_000_000)
        }
        throw OriginTestError("station \(station) not complete within \(timeout)s:\n\(service?.log.suffix(3000) ?? "")")
    }

    /// Starts the downloader on (overridden) Wi-Fi and offlines `productId` with `params`; the
    /// token and its status once cached.
    func startAndOffline(_ productId: String, _ params: [String: JSONValue] = [:]) async throws -> (token: String, status: JSONValue) {
        try start()
        _ = try await call("network.set", ["type": "wifi"])
        var all = params
        all["productId"] = .string(productId)
        let added = try await call("offline.add", .object(all))
        guard let token = added["token"]?.stringValue else { throw OriginTestError("offline.add gave no token: \(added)") }
        return (token, try await waitProduct(token, state: "cached"))
    }

    /// Moves the origin's clock `offset` seconds from the real one (`/_control/clock`).
    func setServerClock(offset: Double) async throws {
        let response = try await api.post("/_control/clock", ["offsetSeconds": offset], authorized: false)
        guard response.status == 200 else { throw OriginTestError("/_control/clock answered \(response.status)") }
    }

    func waitProduct(_ token: String, state: String, timeout: Double = 30) async throws -> JSONValue {
        let deadline = Date().addingTimeInterval(timeout)
        var last: JSONValue = .null
        while Date() < deadline {
            last = try await call("offline.status", ["token": .string(token)])
            if last["state"]?.stringValue == state { return last }
            try await Task.sleep(nanoseconds: 150_000_000)
        }
        throw OriginTestError("token \(token) not \(state) within \(timeout)s: \(last)")
    }

    /// The token's status once its manifest hash is `hash` (a re-offline swapped to it), or the
    /// last one seen after `timeout`; `seen`, a status already read, is looked at first.
    func statusOnceSwapped(_ token: String, to hash: String, seen: JSONValue? = nil, timeout: Double = 60) async throws -> JSONValue {
        var status = seen
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let status, status["manifestHash"]?.stringValue == hash || Date() >= deadline { return status }
            if status != nil { try await Task.sleep(nanoseconds: 200_000_000) }
            status = try await call("offline.status", ["token": .string(token)])
        }
    }

    /// Every regular file under the state dir's media folder, relative to it.
    func mediaFiles() -> [String] {
        guard let e = FileManager.default.enumerator(atPath: mediaDir) else { return [] }
        var files: [String] = []
        while let next = e.nextObject() as? String {
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: mediaDir + "/" + next, isDirectory: &isDir), !isDir.boolValue { files.append(next) }
        }
        return files.sorted()
    }

    func mediaStats() async throws -> (full: [String: Int], ranged: [String: Int]) {
        let media = try await api.stats().object("media")
        let full = media.object("fullBodies").compactMapValues { ($0 as? NSNumber)?.intValue }
        let ranged = media.object("rangeAnswers").compactMapValues { ($0 as? NSNumber)?.intValue }
        return (full, ranged)
    }
}

func sha256(ofFile path: String) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
    process.arguments = [path]
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self).split(separator: " ").first.map(String.init) ?? ""
}

/// `tracks/<id>.<ext>` for a URL like `/media/<id>.<ext>`.
func localName(_ url: String) -> String { "tracks/" + (url.split(separator: "/").last.map(String.init) ?? "") }
