import Foundation
import TestSupport
import Wire
import XCTest

@testable import downloader

/// The downloader against an HTTPS edge (nginx: TLS with a private CA, HTTP/2) in front of the
/// reference origin, as a device meets a CDN: trusted through `originCAFile`, refused without
/// it or with a wrong pin (`TLSFailed`, never a network outage), through a CONNECT proxy named
/// by `originProxy` or `https_proxy`.
final class HTTPSEdgeTests: XCTestCase {
    /// No proxy from the environment the tests run in: each test says which one it wants.
    static let noProxy = [
        "https_proxy": "", "HTTPS_PROXY": "", "http_proxy": "", "all_proxy": "", "ALL_PROXY": "",
        "no_proxy": "", "NO_PROXY": "",
    ]

    private func harness() throws -> (DownloaderHarness, TLSEdge) {
        let h = try DownloaderHarness()
        let edge = try TLSEdge(upstreamPort: h.origin.port)
        h.originURL = edge.baseURL
        h.environment = Self.noProxy
        return (h, edge)
    }

    private func config(_ fields: [String: String]) -> String {
        "{" + fields.sorted { $0.key < $1.key }.map { "\"\($0.key)\": \"\($0.value)\"" }.joined(separator: ", ") + "}"
    }

    private func offline(_ h: DownloaderHarness, _ productId: String) async throws -> String {
        let added = try await h.call("offline.add", ["productId": .string(productId)])
        guard let token = added["token"]?.stringValue else { throw OriginTestError("offline.add gave no token: \(added)") }
        return token
    }

    /// Trusted through the private CA: a station syncs and a product offlines, every
    /// request over HTTP/2.
    func testAStationSyncsAndAProductOfflinesOverHTTP2ThroughAPrivateCA() async throws {
        let (h, edge) = try harness()
        defer {
            h.discard()
            edge.discard()
        }
        try h.setConfig(config(["originCAFile": edge.caFile]))
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        let list = try await h.call("stations.list")
        XCTAssertEqual(list["available"]?.boolValue, true, "\(list)")
        _ = try await h.call("stations.sync", ["stationId": "st-9"])
        try await h.waitStationComplete("st-9")
        let token = try await offline(h, "tr-1")
        _ = try await h.waitProduct(token, state: "cached")

        let requests = edge.requests()
        XCTAssertTrue(requests.contains { $0.path.hasPrefix("/media/") }, "media came through the edge: \(requests)")
        XCTAssertTrue(requests.contains { $0.path.hasPrefix("/v1/playbackinfo/tr-1") }, "\(requests)")
        XCTAssertEqual(requests.filter { $0.proto != "HTTP/2.0" }.map(\.description), [], "every request over HTTP/2")
        XCTAssertEqual(requests.filter { $0.method == "HEAD" }.map(\.description), [], "GET only")
    }

    /// Without the CA the edge's certificate is not trusted: the calls answer `TLSFailed`
    /// (1013) saying what to check, and an item waiting on it shows `TLSFailed`, never
    /// `OriginUnreachable` or `NetworkError`.
    func testAnUntrustedEdgeIsTLSFailedNeverANetworkOutage() async throws {
        let (h, edge) = try harness()
        defer {
            h.discard()
            edge.discard()
        }
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])

        let list = try await h.call("stations.list")
        XCTAssertEqual(list["available"]?.boolValue, false)
        XCTAssertEqual(list["error"]?.stringValue, "TLSFailed", "\(list)")
        for (method, params) in [
            ("stations.sync", JSONValue.object(["stationId": "st-9"])),
            ("offline.add", JSONValue.object(["productId": "tr-1"])),
        ] {
            do {
                _ = try await h.call(method, params)
                XCTFail("\(method) over an untrusted edge answers TLSFailed")
            } catch let error as RPCError {
                XCTAssertEqual(error.name, "TLSFailed", "\(method): \(error)")
                XCTAssertEqual(error.code, 1013, method)
                XCTAssertEqual(error.details["transportError"]?.stringValue, "TLSFailed", method)
                for hint in ["originCAFile", "clock"] {
                    XCTAssertTrue(error.message.contains(hint), "\(method): the message names \(hint): \(error.message)")
                }
            }
        }

        // An item whose manifest came while the CA was trusted, held on cellular meanwhile,
        // then downloaded once the device no longer trusts the edge.
        try h.stop()
        try h.setConfig(config(["originCAFile": edge.caFile]))
        try h.start()
        _ = try await h.call("network.set", ["type": "cellular"])
        let token = try await offline(h, "tr-2")
        let held = try await h.waitProduct(token, state: "idle")
        XCTAssertEqual(held["error"]?.stringValue, "CellularNotAllowed", "\(held)")
        try h.stop()
        try h.setConfig("{}")
        try h.start()
        let client = try await h.client()
        let events = EventCollector(client)
        _ = try await client.call("events.subscribe", ["topics": ["downloads"]])
        _ = try await h.call("network.set", ["type": "wifi"])
        let deadline = Date().addingTimeInterval(30)
        var status: JSONValue = .null
        while Date() < deadline {
            status = try await h.call("offline.status", ["token": .string(token)])
            if status["error"]?.stringValue == "TLSFailed" { break }
            XCTAssertNotEqual(status["error"]?.stringValue, "NetworkError", "\(status)")
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        XCTAssertEqual(status["state"]?.stringValue, "idle", "\(status)")
        XCTAssertEqual(status["error"]?.stringValue, "TLSFailed", "\(status)")
        XCTAssertTrue(status["reason"]?.stringValue?.contains("originCAFile") == true, "the reason says what to check: \(status)")
        let named = events.all.compactMap { $0.type == "ItemStateChanged" ? $0.data["error"]?.stringValue : nil }
        XCTAssertTrue(named.contains("TLSFailed"), "\(named)")
        XCTAssertFalse(named.contains { ["NetworkError", "OriginUnreachable"].contains($0) }, "\(named)")
        await client.close()
    }

    /// A pin that matches no key of the edge refuses it (`TLSFailed` naming the pin); the
    /// right pin, alone or among others, lets it through.
    func testAWrongPinIsTLSFailedAndTheRightPinWorks() async throws {
        let (h, edge) = try harness()
        defer {
            h.discard()
            edge.discard()
        }
        let wrong = "sha256//" + Data(repeating: 7, count: 32).base64EncodedString()
        try h.setConfig(config(["originCAFile": edge.caFile, "originPinnedPublicKey": wrong]))
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        do {
            _ = try await h.call("stations.sync", ["stationId": "st-9"])
            XCTFail("a wrong pin refuses the edge")
        } catch let error as RPCError {
            XCTAssertEqual(error.name, "TLSFailed", "\(error)")
            XCTAssertEqual(error.code, 1013)
            XCTAssertTrue(error.message.contains("originPinnedPublicKey"), error.message)
        }

        try h.stop()
        try h.setConfig(config(["originCAFile": edge.caFile, "originPinnedPublicKey": wrong + ";" + edge.publicKeyPin]))
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        _ = try await h.call("stations.sync", ["stationId": "st-9"])
        try await h.waitStationComplete("st-9")
    }

    /// Through a CONNECT proxy: named by `originProxy` (which wins over `https_proxy`), or
    /// by `https_proxy` alone; the proxy's log proves the tunnels.
    func testTrafficGoesThroughTheConfiguredProxyOrTheEnvironmentsOne() async throws {
        let (h, edge) = try harness()
        defer {
            h.discard()
            edge.discard()
        }
        let proxy = try ConnectProxy()
        defer { proxy.discard() }
        let refusing = try RefusingPort()
        let target = "127.0.0.1:\(edge.port)"

        // The config's proxy wins over the environment's (which would refuse every connection).
        h.environment = Self.noProxy.merging(["https_proxy": refusing.url]) { $1 }
        try h.setConfig(config(["originCAFile": edge.caFile, "originProxy": proxy.url]))
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        _ = try await h.call("stations.sync", ["stationId": "st-9"])
        try await h.waitStationComplete("st-9")
        let throughConfig = proxy.connects
        XCTAssertFalse(throughConfig.isEmpty, "originProxy carried the traffic")
        XCTAssertTrue(throughConfig.allSatisfy { $0 == target }, "\(throughConfig)")

        // Without originProxy, libcurl takes https_proxy from the environment.
        try h.stop()
        h.environment = Self.noProxy.merging(["https_proxy": proxy.url]) { $1 }
        try h.setConfig(config(["originCAFile": edge.caFile]))
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        let token = try await offline(h, "tr-1")
        _ = try await h.waitProduct(token, state: "cached")
        XCTAssertGreaterThan(proxy.connects.count, throughConfig.count, "https_proxy carried the traffic: \(proxy.connects)")
        XCTAssertTrue(edge.requests().contains { $0.path.hasPrefix("/v1/playbackinfo/tr-1") })
    }

    /// A TLS failure is retried like an unreachable origin, but never sooner than a minute.
    func testATLSFailureIsRetriedNoSoonerThanAMinute() {
        for failures in 1...8 {
            XCTAssertGreaterThanOrEqual(PolicyGate.originRetryDelay(failures: failures, error: "TLSFailed"), 60)
            XCTAssertLessThanOrEqual(PolicyGate.originRetryDelay(failures: failures, error: "NetworkError"), 30)
        }
    }
}
