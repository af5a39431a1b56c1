import Glibc
import TestSupport
import XCTest

/// The downloader starts, answers service.status over its socket and stops cleanly on SIGTERM.
final class DownloaderSmokeTests: XCTestCase {
    func testStartsAnswersAndStops() async throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let service = try ServiceProcess("downloader", in: dir)
        try service.waitReady()
        let client = try await service.client()
        let status = try await client.call("service.status")
        XCTAssertEqual(status["service"]?.stringValue, "downloader")
        await client.close()
        service.signal(SIGTERM)
        XCTAssertEqual(try service.waitExit(), 0)
    }
}
