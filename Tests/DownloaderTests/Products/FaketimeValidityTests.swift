import Foundation
import GRDB
import TestSupport
import Wire
import XCTest

/// Offline validity with the device clock really wound back: the downloader runs under libfaketime
/// (Debian's `faketime` package) 30 days in the past. Expiry follows the origin's clock, so
/// stations offlined before still expire when the server says so.
final class FaketimeValidityTests: XCTestCase {
    static let library = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
    let day = 86_400.0

    func testADeviceClockSetBack30DaysDoesNotExtendValidity() async throws {
        try XCTSkipUnless(FileManager.default.fileExists(atPath: Self.library), "libfaketime is not installed (make deps)")
        let h = try DownloaderHarness()
        defer { h.discard() }
        try h.start()
        _ = try await h.call("network.set", ["type": "wifi"])
        for station in ["st-9", "st-10"] {
            _ = try await h.call("stations.sync", ["stationId": .string(station)])
            try await h.waitStationComplete(station)
        }
        let keepManifest = try await h.manifest("st-9")
        let keepItem = try XCTUnwrap(keepManifest.keys.min())
        try h.stop()

        // Ten days on at the origin, which refuses to extend or re-sync anything: the expiries
        // given before (st-10 three days, st-9 seven) stand.
        let refuse: [[String: Any]] = Array(repeating: ["status": 503], count: 40)
        try await h.api.injectFaults("/v1/offline/extend", refuse)
        try await h.api.injectFaults("/v1/stations/", refuse)
        try await h.setServerClock(offset: 10 * day)

        let service = try startSetBack(h)

        let deadline = Date().addingTimeInterval(20)
        var local: [String] = []
        repeat {
            let list: JSONValue
            do { list = try await h.call("stations.list") } catch {
                throw OriginTestError("\(error)\n\(service.log.suffix(3000))")
            }
            local = (list["localOffline"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
            if !local.contains("st-10") { break }
            try await Task.sleep(nanoseconds: 500_000_000)
        } while Date() < deadline
        XCTAssertEqual(local, ["st-9"], "st-10 (delete) expired by the server's clock:\n\(service.log.suffix(4000))")
        let kept = try await h.call("offline.state", ["productId": .string(keepItem)])
        XCTAssertEqual(kept["state"]?.stringValue, "OFFLINED_BUT_NOT_VALID")

        // Proof the service's device clock was really set back: it stamped the anchor ~30 days ago.
        let stamped = try await h.catalogPool().read { db in
            try Date.fetchOne(db, sql: "SELECT updatedAt FROM settings WHERE key = 'trustedTime'")
        }
        let age = Date().timeIntervalSince(try XCTUnwrap(stamped))
        XCTAssertGreaterThan(age, 29 * day)
        print("faketime: device clock \(Int(age / day)) days back, after +10 d of server time local \(local), \(keepItem) \(kept["state"]?.stringValue ?? "?")")
    }

    /// A one-hour rental ends after an hour of the server's time, whatever the device clock says,
    /// and a restart with the clock 30 days back and no origin does not bring it back.
    func testARentalEndsByServerTimeWithTheClockSetBack() async throws {
        try XCTSkipUnless(FileManager.default.fileExists(atPath: Self.library), "libfaketime is not installed (make deps)")
        let h = try DownloaderHarness()
        defer { h.discard() }
        let (token, _) = try await h.startAndOffline("tr-1", ["rentalSeconds": 3600])
        try h.stop()

        // Device clock 30 days back: the rental is still valid (the trusted time never goes back)…
        var service = try startSetBack(h)
        let stillValid = try await h.call("offline.state", ["productId": "tr-1"])
        XCTAssertEqual(stillValid["state"]?.stringValue, "OFFLINED_AND_VALID", service.log.suffix(3000).description)
        // …and once the server's clock is two hours on, it is over.
        try await h.setServerClock(offset: 7200)
        _ = try await h.call("sync.now")
        let over = try await h.call("offline.state", ["productId": "tr-1"])
        XCTAssertEqual(over["state"]?.stringValue, "OFFLINED_BUT_NOT_VALID")

        // Restarted, still 30 days back, with the origin gone: still over, the file still there.
        h.kill9()
        _ = h.origin.stop()
        service = try startSetBack(h)
        let afterRestart = try await h.call("offline.state", ["productId": "tr-1"])
        XCTAssertEqual(afterRestart["state"]?.stringValue, "OFFLINED_BUT_NOT_VALID", service.log.suffix(3000).description)
        let status = try await h.call("offline.status", ["token": .string(token)])
        XCTAssertEqual(status["state"]?.stringValue, "cached")
        // tr-1's file and its two images (poster and thumbnail).
        let files = h.mediaFiles()
        XCTAssertEqual(files.count, 3, "\(files)")
        XCTAssertEqual(files.filter { $0.hasPrefix("images/tr-1/") }.count, 2, "\(files)")
        print(
            "faketime rental: 1 h rental, device clock -30 d: valid → +2 h server time \(over["state"]?.stringValue ?? "?") → restart offline \(afterRestart["state"]?.stringValue ?? "?")"
        )
    }

    /// A fresh device whose clock runs 10 days ahead and that never saw a server time: that clock
    /// must not become the floor of trusted time, or a one-day station would expire at once.
    func testAFreshDeviceWithItsClockAheadDoesNotExpireAStationEarly() async throws {
        try XCTSkipUnless(FileManager.default.fileExists(atPath: Self.library), "libfaketime is not installed (make deps)")
        let h = try DownloaderHarness()
        defer { h.discard() }
        let service = try startSetBack(h, clock: "+10d")
        _ = try await h.call("network.set", ["type": "wifi"])
        _ = try await h.call("stations.sync", ["stationId": "st-11"])
        try await h.waitStationComplete("st-11")
        // Several expiry rounds (every ~2 s) at the trusted time.
        try await Task.sleep(nanoseconds: 6_000_000_000)
        let list = try await h.call("stations.list")
        let local = (list["localOffline"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
        XCTAssertEqual(local, ["st-11"], "a one-day station expired by the device clock:\n\(service.log.suffix(3000))")
        let anchor = try await h.catalogPool().read { db in
            try String.fetchOne(db, sql: "SELECT value FROM settings WHERE key = 'trustedTime'")
        }
        let fields = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(try XCTUnwrap(anchor).utf8)) as? [String: Any])
        let floor = Date(timeIntervalSince1970: try XCTUnwrap(fields["floor"] as? Double) / 1000)
        XCTAssertLessThan(floor.timeIntervalSinceNow, 3600, "the floor took the device clock: \(floor)")
    }

    /// The downloader with the device clock 30 days back (the boot clock left alone, as on a real
    /// device). Spawned directly with libfaketime preloaded, the service does not see its
    /// command-line options (seen with libfaketime 0.9.10), so its settings go in the environment.
    private func startSetBack(_ h: DownloaderHarness, clock: String = "-30d") throws -> ServiceProcess {
        let service = try ServiceProcess(
            "downloader", in: h.dir, extraArgs: ["--origin", h.origin.baseURL],
            environment: [
                "CASSETTE_CLIENT_TOKEN": "demo", "CASSETTE_CLIENT_SECRET": "demo", "CASSETTE_ORIGIN": h.origin.baseURL,
                "CASSETTE_RUNTIME_DIR": h.dir.runtimeDir, "CASSETTE_STATE_DIR": h.dir.stateDir,
                "LD_PRELOAD": Self.library, "FAKETIME": clock, "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            ])
        try service.waitReady()
        h.service = service
        return service
    }
}
