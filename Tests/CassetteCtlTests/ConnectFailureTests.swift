import Glibc
import XCTest

@testable import cassettectl

final class ConnectFailureTests: XCTestCase {
    func testPermissionDeniedSaysWhichGroupToJoin() {
        let failure = ConnectFailure.describe(
            errno: EACCES, path: "/run/cassette/player.sock", service: .player,
            group: "cassette-clients", underlying: "")
        XCTAssertEqual(
            failure.message,
            "permission denied on /run/cassette/player.sock: add your user to the cassette-clients group (sudo usermod -aG cassette-clients $USER) and log in again"
        )
        XCTAssertEqual(failure.name, "PermissionDenied")
        XCTAssertEqual(failure.exit, 69)
        XCTAssertEqual(ConnectFailure.describe(errno: EPERM, path: "/p", service: .player, group: "g", underlying: "").name, "PermissionDenied")
    }

    func testMissingAndRefusedSocketsAskWhetherTheServiceRuns() {
        let missing = ConnectFailure.describe(errno: ENOENT, path: "/x/downloader.sock", service: .downloader, group: "g", underlying: "")
        XCTAssertEqual(missing.name, "NoSocket")
        XCTAssertTrue(missing.message.contains("/x/downloader.sock") && missing.message.contains("is it running?"), missing.message)
        XCTAssertTrue(missing.message.contains("cassette-downloader.socket"), missing.message)
        let refused = ConnectFailure.describe(errno: ECONNREFUSED, path: "/x/player.sock", service: .player, group: "g", underlying: "")
        XCTAssertEqual(refused.name, "ConnectionRefused")
        let other = ConnectFailure.describe(errno: 0, path: "/x/player.sock", service: .player, group: "g", underlying: "ConnectFailed: boom")
        XCTAssertTrue(other.message.contains("boom"), other.message)
    }

    func testProbeTellsMissingFromRefused() throws {
        let dir = NSTemporaryDirectory() + "ctl-probe-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        XCTAssertEqual(ConnectFailure.probe(dir + "/none.sock"), ENOENT)
        // A socket file nobody listens on: bound, never listening.
        let path = dir + "/stale.sock"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            let bytes = Array(path.utf8)
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        XCTAssertEqual(bound, 0)
        XCTAssertEqual(ConnectFailure.probe(path), ECONNREFUSED)
        XCTAssertEqual(ConnectFailure.socketGroup(path), ConnectFailure.defaultGroup, "a socket of root's group names the shipped group")
    }

    func testJSONOfAFailure() {
        let failure = ConnectFailure.describe(errno: EACCES, path: "/p", service: .player, group: "g", underlying: "")
        XCTAssertEqual(failure.json["error"]?["code"]?.intValue, 69)
        XCTAssertEqual(failure.json["error"]?["name"], "PermissionDenied")
        XCTAssertEqual(failure.json["error"]?["message"]?.stringValue, failure.message)
    }
}
