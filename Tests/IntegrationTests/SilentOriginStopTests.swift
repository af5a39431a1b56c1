import Foundation
import Glibc
import TestSupport
import Wire
import XCTest

/// docs/operations.md, "Stopping": SIGTERM with nothing in flight ends a service at once, also
/// when the origin accepts connections and never answers, so that every request the service
/// made by itself since its start (catalog refresh, offline extension, the player's look at
/// the origin) hangs on it. Each service exits with status 0 within 3 s and logs nothing at
/// warning or above: cutting off its own requests is an ordinary stop, not a failure.
final class SilentOriginStopTests: XCTestCase {
    func testEveryServiceStopsPromptlyAndQuietlyWhenTheOriginNeverAnswers() async throws {
        let port = try SilentPort()
        let dir = try TestDirectory(prefix: "cso")
        defer { dir.remove() }
        // The downloader first: the player tells it the app's offline mode as it starts.
        var services: [ServiceProcess] = []
        defer { services.forEach { $0.kill9() } }
        for name in ["downloader", "reporter", "player"] {
            var args = ["--origin", port.url]
            if name == "player" { args += ["--audio-device", "null", "--audio-pace", "realtime"] }
            let service = try ServiceProcess(
                name, in: dir, extraArgs: args,
                environment: ["CASSETTE_CLIENT_TOKEN": "demo", "CASSETTE_CLIENT_SECRET": "demo"])
            services.append(service)
            try service.waitReady()
            try await Self.waitForCatalog(service)
        }
        // The background requests of the start are out by now, and the origin holds them.
        try await Task.sleep(for: .seconds(1))
        for service in services.reversed() {
            let stopping = ContinuousClock.now
            service.signal(SIGTERM)
            XCTAssertEqual(try service.waitExit(timeout: 3), 0, "\(service.name) did not stop within 3 s:\n\(service.log)")
            XCTAssertEqual(service.warningOrWorseLines, [], "\(service.name):\n\(service.log)")
            print("\(service.name) with a silent origin stopped \(stopping.duration(to: .now)) after SIGTERM")
        }
    }

    /// Waits until the service's catalog is open (its background work starts then).
    static func waitForCatalog(_ service: ServiceProcess) async throws {
        let client = try await service.client()
        defer { Task { await client.close() } }
        try await waitUntil("\(service.name)'s catalog open\n\(service.log)") {
            let status = try await client.call("service.status", timeout: .seconds(5))
            return status["health"]?["catalogMs"]?.doubleValue != nil
        }
    }
}
