import Foundation
import GRDB
import HTTPClient
import TestSupport
import Wire
import XCTest

/// Shared by the policy, network, storage and eviction tests.
enum PolicyTest {
    static func fileSize(_ path: String) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }

    /// The offline manifest of a product (what offline.add will fetch), straight from the origin.
    static func product(_ base: String, _ productId: String) async throws -> (url: String, size: Int, sha256: String) {
        let client = HTTPClient(credentials: BasicCredentials(token: "demo", secret: "demo"))
        let response = try await client.send(
            HTTPRequest(
                method: "GET", url: "\(base)/v1/playbackinfo/\(productId)?mode=offline&quality=HIGH",
                timeoutSeconds: 15))
        let info = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any] ?? [:]
        let manifest = info.object("manifest")
        return (manifest.string("url") ?? "", manifest.int("sizeBytes") ?? 0, manifest.string("sha256") ?? "")
    }

    /// The origin's media counters for one file name (e.g. `tr-1.flac`).
    static func mediaCounts(_ base: String, _ file: String) async throws -> (full: Int, ranged: Int) {
        let response = try await HTTPClient().send(HTTPRequest(method: "GET", url: base + "/_control/stats", timeoutSeconds: 15))
        let stats = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any] ?? [:]
        let media = stats.object("media")
        func count(_ key: String) -> Int {
            media.object(key).filter { $0.key.hasSuffix(file) }.compactMap { ($0.value as? NSNumber)?.intValue }.reduce(0, +)
        }
        return (count("fullBodies"), count("rangeAnswers"))
    }

    static func fileName(_ url: String) -> String { url.split(separator: "/").last.map(String.init) ?? url }

    /// Runs a command, returning its exit status (output discarded unless it fails).
    @discardableResult
    static func run(_ arguments: [String]) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// The token of an offline.add answer.
    static func token(_ status: JSONValue) throws -> String {
        guard let token = status["token"]?.stringValue else { throw OriginTestError("no token in \(status)") }
        return token
    }

    static func rpcErrorName(_ error: Error) -> String? { (error as? RPCError)?.name }
}

extension DownloaderHarness {
    func status(_ token: String) async throws -> JSONValue { try await call("offline.status", ["token": .string(token)]) }

    func activeDownloads() async throws -> Int { try await call("service.status")["activeDownloads"]?.intValue ?? -1 }

    /// The catalog, opened as the player would (to set `stationItems.playedAt`).
    /// The test's own connection to the daemon's catalog; it waits for the daemon's writes as the
    /// services do rather than failing at once on a busy database.
    func catalogPool() throws -> DatabasePool {
        var config = Configuration()
        config.busyMode = .timeout(10)
        return try DatabasePool(path: dir.stateDir + "/catalog.sqlite", configuration: config)
    }
}
