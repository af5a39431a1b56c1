import Foundation
import TestSupport
import Wire
import XCTest

/// The network policy over the socket with `network.set`: cellular mid-download stops within 2 s and
/// resumes on Wi-Fi with Range; no network; the per-item override; the persisted policy.
final class PolicyNetworkTests: XCTestCase {
    func testCellularMidDownloadStopsAndResumesOnWifiWithRange() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        try await h.api.injectFaults("/media/", [["bytesPerSecond": 50_000, "repeat": 1]])
        try h.start()
        let events = try await h.client()
        _ = try await events.call("events.subscribe", ["topics": ["downloads", "network"]])
        _ = try await h.call("network.set", ["type": "wifi"])
        let product = try await PolicyTest.product(h.origin.baseURL, "tr-1")
        let part = h.mediaDir + "/tracks/" + PolicyTest.fileName(product.url) + ".part"
        let token = try PolicyTest.token(try await h.call("offline.add", ["productId": "tr-1"]))
        try await waitUntil("bytes in the .part") { PolicyTest.fileSize(part) > 40_000 }

        let switched = Date()
        let network = try await h.call("network.set", ["type": "cellular"])
        XCTAssertEqual(network["downloads"]?.stringValue, "allowCellularItemsOnly")
        XCTAssertEqual(network["metered"]?.boolValue, true)
        let idle = try await h.status(token)
        XCTAssertEqual(idle["state"]?.stringValue, "idle")
        XCTAssertEqual(idle["error"]?.stringValue, "CellularNotAllowed")
        try await waitUntil("transfer stopped", timeout: 5) { try await h.activeDownloads() == 0 }
        let stopped = Date().timeIntervalSince(switched)
        let sizeAtStop = PolicyTest.fileSize(part)
        try await Task.sleep(nanoseconds: 1_500_000_000)
        XCTAssertEqual(PolicyTest.fileSize(part), sizeAtStop, "bytes still arrive on cellular")
        XCTAssertLessThan(stopped, 2, "transfer not stopped within 2 s")
        XCTAssertLessThan(sizeAtStop, product.size)
        let rangedBefore = try await PolicyTest.mediaCounts(h.origin.baseURL, PolicyTest.fileName(product.url)).ranged
        XCTAssertEqual(rangedBefore, 0)

        // Back on Wi-Fi: resumes by itself from the bytes on disk, with Range.
        _ = try await h.api.delete("/_control/faults")
        _ = try await h.call("network.set", ["type": "wifi"])
        let done = try await h.waitProduct(token, state: "cached", timeout: 30)
        XCTAssertEqual(done["error"], .null)
        let counts = try await PolicyTest.mediaCounts(h.origin.baseURL, PolicyTest.fileName(product.url))
        XCTAssertEqual(counts.ranged, 1, "resume did not use Range: \(counts)")
        XCTAssertLessThanOrEqual(counts.full, 1, "downloaded twice in full")
        XCTAssertEqual(try sha256(ofFile: h.mediaDir + "/tracks/" + PolicyTest.fileName(product.url)), product.sha256)
        print(
            "policy: cellular switch stopped the transfer in \(String(format: "%.2f", stopped)) s at \(sizeAtStop)/\(product.size) bytes; resumed with \(counts.ranged) Range answer(s)"
        )

        // No network at all: NoNetwork, and `auto` gives the kernel's answer back.
        _ = try await h.call("network.set", ["type": "none"])
        let second = try PolicyTest.token(try await h.call("offline.add", ["productId": "tr-2"]))
        let waiting = try await h.status(second)
        XCTAssertEqual(waiting["state"]?.stringValue, "idle")
        XCTAssertEqual(waiting["error"]?.stringValue, "NoNetwork")
        let auto = try await h.call("network.set", ["type": "auto"])
        XCTAssertEqual(auto["source"]?.stringValue, "kernel")
        XCTAssertEqual(auto["overridden"]?.boolValue, false)
        if auto["downloads"]?.stringValue == "all" {
            _ = try await h.waitProduct(second, state: "cached", timeout: 30)
        }

        var seen: [String] = []
        for await event in events.events {
            if event.type == "NetworkChanged" { seen.append(event.data["type"]?.stringValue ?? "?") }
            if event.type == "ItemStateChanged", event.data["error"]?.stringValue == "NoNetwork" { break }
        }
        XCTAssertEqual(seen.filter { $0 != "ethernet" }.prefix(4), ["wifi", "cellular", "wifi", "none"], "NetworkChanged events: \(seen)")
        await events.close()

        // The operator's view: the log says what changed and why downloads waited, plainly.
        let log = h.service!.log
        for line in [
            "network changed", "from=wifi", "to=cellular", "downloads wait", "why=CellularNotAllowed", "why=NoNetwork",
            "downloaded and verified", "file=tracks/",
        ] {
            XCTAssertTrue(log.contains(line), "the log lacks \(line.debugDescription):\n\(log)")
        }
        XCTAssertFalse(log.contains("Optional(") || log.contains("path(\""), "values are not printed plainly:\n\(log)")
    }

    func testPerItemCellularOverrideAndPersistedPolicy() async throws {
        let h = try DownloaderHarness()
        defer { h.discard() }
        try h.start()
        let defaults = try await h.call("policy.get")
        XCTAssertEqual(defaults["allowCellular"]?.boolValue, false)
        XCTAssertEqual(defaults["minFreeBytes"]?.intValue, 1 << 30)
        XCTAssertEqual(defaults["maxCacheBytes"], .null)

        // Bad input: a clear error naming the field, and nothing changed.
        for bad: JSONValue in [["minFreeBytes": -5], ["allowCellular": "yes"], ["maxParallel": 99], ["offlineAudioQuality": "ULTRA"], ["nope": 1]] {
            do {
                _ = try await h.call("policy.set", bad)
                XCTFail("accepted \(bad)")
            } catch let error as RPCError {
                XCTAssertEqual(error.code, -32602)
                XCTAssertTrue(error.message.contains("params."), error.message)
            }
        }
        do {
            _ = try await h.call("network.set", ["type": "satellite"])
            XCTFail("accepted a bad network type")
        } catch let error as RPCError { XCTAssertEqual(error.code, -32602) }
        let unchanged = try await h.call("policy.get")
        XCTAssertEqual(unchanged, defaults)

        _ = try await h.call("policy.set", ["offlineAudioQuality": "LOSSLESS"])
        _ = try await h.call("network.set", ["type": "cellular"])
        let plain = try PolicyTest.token(try await h.call("offline.add", ["productId": "tr-2"]))
        let override = try PolicyTest.token(try await h.call("offline.add", ["productId": "tr-3", "allowCellular": true]))
        let done = try await h.waitProduct(override, state: "cached")
        XCTAssertEqual(done["allowCellular"]?.boolValue, true)
        XCTAssertEqual(done["quality"]?.stringValue, "LOSSLESS", "the policy's offline quality is what was asked for")
        let waiting = try await h.status(plain)
        XCTAssertEqual(waiting["state"]?.stringValue, "idle")
        XCTAssertEqual(waiting["error"]?.stringValue, "CellularNotAllowed")
        let plainFile = PolicyTest.fileName(try await PolicyTest.product(h.origin.baseURL, "tr-2").url)
        let untouched = try await PolicyTest.mediaCounts(h.origin.baseURL, plainFile)
        XCTAssertEqual(untouched.full + untouched.ranged, 0, "a cellular-forbidden file was fetched")

        // The global switch lets the rest through, and survives a restart.
        let set = try await h.call("policy.set", ["allowCellular": true, "maxCacheBytes": 500_000_000])
        XCTAssertEqual(set["downloads"]?.stringValue, "all")
        _ = try await h.waitProduct(plain, state: "cached")
        try h.stop()
        try h.start()
        let kept = try await h.call("policy.get")
        XCTAssertEqual(kept["allowCellular"]?.boolValue, true)
        XCTAssertEqual(kept["maxCacheBytes"]?.intValue, 500_000_000)
        XCTAssertEqual(kept["offlineAudioQuality"]?.stringValue, "LOSSLESS")
        let overridden = try await h.call("network.get")["overridden"]?.boolValue
        XCTAssertEqual(overridden, false, "the override is not persisted")

        // offline.estimate: what is on disk costs nothing, a new one its size.
        let estimate = try await h.call("offline.estimate", ["productIds": ["tr-2", "tr-1"]])
        let items = try XCTUnwrap(estimate["items"]?.arrayValue)
        XCTAssertEqual(items.first?["neededBytes"]?.intValue, 0)
        XCTAssertGreaterThan(items.last?["neededBytes"]?.intValue ?? 0, 0)
        XCTAssertEqual(estimate["bytesNeeded"]?.intValue, items.last?["neededBytes"]?.intValue)
        XCTAssertEqual(estimate["fits"]?.boolValue, true)
        XCTAssertGreaterThan(estimate["bytesAvailable"]?.intValue ?? 0, 0)
        do {
            _ = try await h.call("offline.estimate", ["productIds": ["../x"]])
            XCTFail("accepted a bad id")
        } catch let error as RPCError { XCTAssertEqual(error.code, -32602) }
    }
}
