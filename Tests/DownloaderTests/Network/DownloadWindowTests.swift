import Foundation
import TestSupport
import Wire
import XCTest

/// Download windows and the rate limit over the socket, against the reference origin: outside
/// every window an add and a sync are accepted and wait `idle` with `OutsideDownloadWindow`,
/// then start by themselves when a window opens; `now: true` passes; bad windows are refused
/// naming the field; several parallel transfers share `maxBytesPerSecond`.
///
/// The downloader runs in a time zone of its own (`TZ`), and the windows are computed relative
/// to now in that zone, so no clock is faked.
final class DownloadWindowTests: XCTestCase {
    /// Half an hour off whole hours, and never the test machine's own zone by chance of UTC.
    static let zone = "Asia/Kolkata"

    private func harness(config: String? = nil, synthetic: [String] = []) throws -> DownloaderHarness {
        let h = try DownloaderHarness(config: config, synthetic: synthetic)
        h.environment["TZ"] = Self.zone
        return h
    }

    /// A window of the downloader's zone that opens `opensIn` seconds from now and lasts
    /// `seconds`, on the day it opens.
    static func window(opensIn: Double, lasting seconds: Double = 7200, maxBytesPerSecond: Int? = nil) -> JSONValue {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: zone)!
        let opens = Date().addingTimeInterval(opensIn)
        let closes = opens.addingTimeInterval(seconds)
        func clock(_ date: Date) -> String {
            let c = calendar.dateComponents([.hour, .minute, .second], from: date)
            return String(format: "%02d:%02d:%02d", c.hour!, c.minute!, c.second!)
        }
        let day = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"][calendar.component(.weekday, from: opens) - 1]
        var fields: [String: JSONValue] = ["days": [.string(day)], "from": .string(clock(opens)), "to": .string(clock(closes))]
        if let maxBytesPerSecond { fields["maxBytesPerSecond"] = .number(Double(maxBytesPerSecond)) }
        return .object(fields)
    }

    private func downloadEvents(_ h: DownloaderHarness) async throws -> (RPCClient, EventCollector) {
        let client = try await h.client()
        let events = EventCollector(client)
        _ = try await client.call("events.subscribe", ["topics": ["downloads"]])
        return (client, events)
    }

    func testOutsideEveryWindowItemsWaitThenStartWhenOneOpens() async throws {
        let h = try harness()
        defer { h.discard() }
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        let (client, events) = try await downloadEvents(h)
        defer { Task { await client.close() } }

        // Every window closed: the next opens in a few seconds (at a whole second, so up to one
        // before `opensAt`).
        let opensIn = 10.0
        let set = try await h.call("policy.set", ["downloadWindows": [Self.window(opensIn: opensIn)]])
        let opensAt = Date().addingTimeInterval(opensIn)
        XCTAssertEqual(set["downloadWindow"]?["open"]?.boolValue, false, "\(set)")
        XCTAssertTrue(
            set["downloadWindow"]?["opensAt"]?.stringValue?.hasSuffix("+05:30") ?? false,
            "windows are not read in the downloader's TZ: \(set)")

        let token = try PolicyTest.token(try await h.call("offline.add", ["productId": "tr-1"]))
        let sync = try await h.call("stations.sync", ["stationId": "st-11"])
        XCTAssertGreaterThan(sync["total"]?.intValue ?? 0, 0, "\(sync)")
        let idle = try await h.status(token)
        XCTAssertEqual(idle["state"]?.stringValue, "idle", "\(idle)")
        XCTAssertEqual(idle["error"]?.stringValue, "OutsideDownloadWindow")
        XCTAssertTrue(idle["reason"]?.stringValue?.contains("opens at") ?? false, "\(idle)")
        try await events.wait("the product idle with OutsideDownloadWindow", timeout: 5) {
            $0.type == "ItemStateChanged" && $0.data["token"]?.stringValue == token && $0.data["state"]?.stringValue == "idle"
                && $0.data["error"]?.stringValue == "OutsideDownloadWindow" && ($0.data["reason"]?.stringValue?.contains("opens at") ?? false)
        }
        try await events.wait("a station item idle with OutsideDownloadWindow", timeout: 5) {
            $0.type == "ItemStateChanged" && $0.data["stationId"]?.stringValue == "st-11" && $0.data["state"]?.stringValue == "idle"
                && $0.data["error"]?.stringValue == "OutsideDownloadWindow"
        }
        let active = try await h.activeDownloads()
        XCTAssertEqual(active, 0)
        let status = try await h.call("service.status")
        XCTAssertEqual(status["downloadWindow"]?["open"]?.boolValue, false, "\(status)")

        // Nothing moves until the window opens…
        try await Task.sleep(nanoseconds: UInt64(max(0, opensAt.timeIntervalSinceNow - 2.5) * 1e9))
        let before = try await h.status(token)
        XCTAssertEqual(before["state"]?.stringValue, "idle", "\(before)")
        XCTAssertEqual(before["bytesOnDisk"]?.intValue, 0, "\(before)")
        let early = events.all.filter { $0.type == "ItemStateChanged" && $0.data["state"]?.stringValue == "downloading" }
        XCTAssertTrue(early.isEmpty, "downloads started outside the window: \(early.map(\.data))")

        // …then both start by themselves.
        try await h.waitStationComplete("st-11", timeout: 60)
        let done = try await h.waitProduct(token, state: "cached", timeout: 30)
        XCTAssertEqual(done["error"], .null)
        let log = h.service!.log
        for line in ["downloads wait", "why=OutsideDownloadWindow", "a download window opened"] {
            XCTAssertTrue(log.contains(line), "the log lacks \(line.debugDescription):\n\(log.suffix(4000))")
        }
        print("download window: held until it opened at \(set["downloadWindow"]?["opensAt"]?.stringValue ?? "?"), then synced")
    }

    func testNowPassesAClosedWindowAndARunningDownloadStopsWhenTheWindowCloses() async throws {
        let h = try harness()
        defer { h.discard() }
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])

        // A window that closes in 8 s (then for hours), and a download that needs longer.
        try await h.api.injectFaults("/media/tr-1.flac", [["bytesPerSecond": 2_000, "repeat": 100]])
        _ = try await h.call("policy.set", ["downloadWindows": [Self.window(opensIn: -60, lasting: 68)]])
        let slow = try PolicyTest.token(try await h.call("offline.add", ["productId": "tr-1"]))
        try await waitUntil("tr-1 downloading", timeout: 8) { try await h.status(slow)["state"]?.stringValue == "downloading" }
        let stopped = try await h.waitProduct(slow, state: "idle", timeout: 15)
        XCTAssertLessThan(stopped["bytesOnDisk"]?.intValue ?? .max, stopped["sizeBytes"]?.intValue ?? 0, "\(stopped)")
        XCTAssertEqual(stopped["error"]?.stringValue, "OutsideDownloadWindow", "\(stopped)")
        try await waitUntil("the transfer stopped", timeout: 5) { try await h.activeDownloads() == 0 }
        _ = try await h.api.delete("/_control/faults")

        // `now` passes while every window is closed; the others wait.
        let waits = try PolicyTest.token(try await h.call("offline.add", ["productId": "tr-2"]))
        let waiting = try await h.status(waits)
        XCTAssertEqual(waiting["error"]?.stringValue, "OutsideDownloadWindow")
        let now = try await h.call("offline.add", ["productId": "tr-3", "now": true])
        XCTAssertEqual(now["now"]?.boolValue, true, "\(now)")
        _ = try await h.waitProduct(try PolicyTest.token(now), state: "cached", timeout: 30)
        // Asked again with `now`, a waiting request goes at once too.
        let again = try await h.call("offline.add", ["productId": "tr-1", "now": true])
        XCTAssertEqual(again["token"]?.stringValue, slow)
        _ = try await h.waitProduct(slow, state: "cached", timeout: 30)
        let stillWaiting = try await h.status(waits)
        XCTAssertEqual(stillWaiting["state"]?.stringValue, "idle")

        // The flag survives a restart; the window list is persisted with the policy.
        try h.stop()
        try h.start()
        let policy = try await h.call("policy.get")
        XCTAssertEqual(policy["downloadWindows"]?.arrayValue?.count, 1, "\(policy)")
        let slowAfter = try await h.status(slow), waitsAfter = try await h.status(waits)
        XCTAssertEqual(slowAfter["now"]?.boolValue, true)
        XCTAssertEqual(waitsAfter["now"]?.boolValue, false)
        XCTAssertEqual(waitsAfter["state"]?.stringValue, "idle")

        // No windows at all: downloads at any time again.
        _ = try await h.call("policy.set", ["downloadWindows": []])
        _ = try await h.waitProduct(waits, state: "cached", timeout: 30)
    }

    func testBadWindowsAreRefusedNamingTheField() async throws {
        let h = try harness(
            config: #"""
                {"downloader":{"maxBytesPerSecond":300000,
                               "downloadWindows":[{"days":["sat","sun"],"from":"00:00","to":"24:00","maxBytesPerSecond":1000000}]}}
                """#)
        defer { h.discard() }
        try h.start()
        let before = try await h.call("policy.get")
        XCTAssertEqual(before["maxBytesPerSecond"]?.intValue, 300_000, "the config file's limit: \(before)")
        XCTAssertEqual(before["downloadWindows"]?.arrayValue?.first?["to"]?.stringValue, "24:00", "the config file's window: \(before)")

        let refusals: [(JSONValue, String)] = [
            (["downloadWindows": [["days": ["mon"], "from": "25:00", "to": "06:00"]]], "params.downloadWindows[0].from"),
            (["downloadWindows": [["days": ["mon"], "from": "22:00", "to": "6"]]], "params.downloadWindows[0].to"),
            (
                ["downloadWindows": [Self.window(opensIn: 0), ["days": ["mon", "funday"], "from": "22:00", "to": "06:00"]]],
                "params.downloadWindows[1].days[1]"
            ),
            (["downloadWindows": [["days": [], "from": "22:00", "to": "06:00"]]], "params.downloadWindows[0].days"),
            (["downloadWindows": [["days": ["mon"], "from": "22:00", "to": "06:00", "until": "x"]]], "params.downloadWindows[0].until"),
            (
                ["downloadWindows": [["days": ["mon"], "from": "22:00", "to": "06:00", "maxBytesPerSecond": 10]]],
                "params.downloadWindows[0].maxBytesPerSecond"
            ),
            (["downloadWindows": "mon-fri 22:00-06:00"], "params.downloadWindows"),
            (["maxBytesPerSecond": -1], "params.maxBytesPerSecond"),
        ]
        for (params, field) in refusals {
            do {
                _ = try await h.call("policy.set", params)
                XCTFail("accepted \(params)")
            } catch let error as RPCError {
                XCTAssertEqual(error.code, -32602, "\(params): \(error)")
                XCTAssertTrue(
                    error.message.contains(field + " ") || error.message.contains(field + "."),
                    "\(params): the message does not name \(field): \(error.message)")
            }
        }
        let after = try await h.call("policy.get")
        XCTAssertEqual(after["downloadWindows"], before["downloadWindows"], "a refused call changed the policy")
        XCTAssertEqual(after["maxBytesPerSecond"], before["maxBytesPerSecond"])

        // A bad window in the config file is logged with its field, and the default kept.
        try h.stop()
        try h.setConfig(#"{"downloader":{"downloadWindows":[{"days":["mon"],"from":"22:00","to":"6:00"}]}}"#)
        try h.start()
        try await waitUntil("the config warning", timeout: 5) { h.service!.log.contains("downloader.downloadWindows[0].to") }
    }

    func testTheRateLimitHoldsAcrossParallelTransfers() async throws {
        let station = "st-rate"
        let limit = 200_000.0
        let h = try harness(config: #"{"downloader":{"maxParallel":3}}"#, synthetic: ["\(station)=6x1500000"])
        defer { h.discard() }
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        let set = try await h.call("policy.set", ["maxBytesPerSecond": .number(limit)])
        XCTAssertEqual(set["downloadWindow"]?["limit"]?.doubleValue, limit, "\(set)")
        _ = try await h.call("stations.sync", ["stationId": .string(station)])

        /// Bytes every file of the station holds on disk, `.part` files included.
        func onDisk() -> Int {
            h.mediaFiles().map { PolicyTest.fileSize(h.mediaDir + "/" + $0) }.reduce(0, +)
        }
        try await waitUntil("three transfers running", timeout: 15) { try await h.activeDownloads() == 3 }
        try await Task.sleep(nanoseconds: 1_000_000_000)
        let (startBytes, startAt) = (onDisk(), Date())
        var parallel = 0
        for _ in 0..<5 {
            try await Task.sleep(nanoseconds: 1_000_000_000)
            parallel = max(parallel, try await h.activeDownloads())
        }
        let seconds = Date().timeIntervalSince(startAt)
        let rate = Double(onDisk() - startBytes) / seconds
        XCTAssertEqual(parallel, 3, "the transfers did not run in parallel")
        XCTAssertLessThanOrEqual(rate, limit * 1.2, "3 transfers together received \(Int(rate)) B/s under a limit of \(Int(limit))")
        XCTAssertGreaterThan(rate, limit * 0.25, "the limited transfers hardly moved: \(Int(rate)) B/s")
        print("rate limit: 3 parallel transfers received \(Int(rate)) B/s together over \(String(format: "%.1f", seconds)) s under \(Int(limit))")

        // The limit lifted: the rest arrives at the link's speed.
        _ = try await h.call("policy.set", ["maxBytesPerSecond": .null])
        try await h.waitStationComplete(station, timeout: 30)
    }
}
