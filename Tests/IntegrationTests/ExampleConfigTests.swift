import Foundation
import TestSupport
import Wire
import XCTest

/// deploy/cassette.example.json (what `make install` puts in /etc/cassette) is a config every
/// service accepts as it is: every key known, every value in range.
final class ExampleConfigTests: XCTestCase {
    func testEveryServiceStartsWithTheExampleConfigAndWarnsAboutNothing() throws {
        let dir = try TestDirectory(prefix: "cfg")
        defer { dir.remove() }
        let config = Command.repository.appendingPathComponent("deploy/cassette.example.json").path
        // The flags keep the example's /run and /var/lib paths out of the test.
        let services = try ["downloader", "player", "reporter"].map { name in
            try ServiceProcess(name, in: dir, extraArgs: ["--config", config] + (name == "player" ? ["--audio-device", "null"] : []))
        }
        defer { services.forEach { $0.kill9() } }
        for service in services {
            try service.waitReady()
            // The config warnings' own words ("media reconciled: … 0 unknown files removed" is not one).
            XCTAssertFalse(service.log.contains("does not read") || service.log.contains("unknown key"), "\(service.name) warned about a key:\n\(service.log)")
            XCTAssertFalse(service.log.contains("using the default"), "\(service.name) refused a value:\n\(service.log)")
        }
    }
}
