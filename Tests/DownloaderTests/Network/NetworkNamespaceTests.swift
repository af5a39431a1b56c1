import Foundation
import Glibc
import HTTPClient
import TestSupport
import Wire
import XCTest

/// A real default route: a network namespace with two veth links named like a Wi-Fi and a
/// cellular interface, the downloader running inside it (`ip netns exec`), and the origin on
/// the Wi-Fi link's far end. Moving the default route to `wwan0` mid-download must stop the
/// transfer; moving it back resumes with Range. Skipped where namespaces cannot be made.
///
/// The downloader sees `/proc` as its systemd unit shows it (`ProcSubset=pid`,
/// `ProtectProc=invisible`: a proc mounted with `subset=pid,hidepid=invisible`, where
/// `/proc/net` does not exist), so the routes must be found the way the unit allows.
final class NetworkNamespaceTests: XCTestCase {
    func testDefaultRouteOverWlanAndWwanSeenInsideANamespace() async throws {
        guard getuid() == 0 else { throw XCTSkip("network namespaces need root") }
        let tag = String(getpid() % 100_000)
        let ns = "cst\(tag)"
        guard PolicyTest.run(["ip", "netns", "add", ns]) == 0 else { throw XCTSkip("ip netns add is not allowed here") }
        let dir = try TestDirectory(prefix: "cnn")
        var processes: [Process] = []
        defer {
            for p in processes where p.isRunning {
                kill(p.processIdentifier, SIGKILL)
                p.waitUntilExit()
            }
            PolicyTest.run(["ip", "netns", "del", ns])
            dir.remove()
        }
        let links = [("wlan0", "cw\(tag)", "10.213.1"), ("wwan0", "cc\(tag)", "10.213.2")]
        for (inside, outside, net) in links {
            for command in [
                ["ip", "link", "add", outside, "type", "veth", "peer", "name", inside, "netns", ns],
                ["ip", "addr", "add", "\(net).1/24", "dev", outside], ["ip", "link", "set", outside, "up"],
                ["ip", "-n", ns, "addr", "add", "\(net).2/24", "dev", inside], ["ip", "-n", ns, "link", "set", inside, "up"],
            ] {
                guard PolicyTest.run(command) == 0 else { throw XCTSkip("cannot set up veth links: \(command.joined(separator: " "))") }
            }
        }
        PolicyTest.run(["ip", "-n", ns, "link", "set", "lo", "up"])
        XCTAssertEqual(PolicyTest.run(["ip", "-n", ns, "route", "add", "default", "via", "10.213.1.1", "dev", "wlan0"]), 0)

        // The origin listens on the Wi-Fi link's far end, reachable from both sides.
        let data = try OriginFixture.freshDataDirectory()
        let origin = Process()
        origin.executableURL = try OriginFixture.binary()
        origin.arguments = ["serve", "--data", data.path, "--host", "10.213.1.1", "--port", "0", "--port-file", data.path + "/port"]
        origin.standardOutput = FileHandle.nullDevice
        origin.standardError = FileHandle.nullDevice
        try origin.run()
        processes.append(origin)
        var port = 0
        try await waitUntil("origin port") {
            port = Int((try? String(contentsOfFile: data.path + "/port", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
            return port > 0
        }
        let base = "http://10.213.1.1:\(port)"

        let downloader = Process()
        downloader.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        let sandboxedProc = "mount -t proc -o subset=pid,hidepid=invisible proc /proc && test ! -e /proc/net && exec \"$0\" \"$@\""
        downloader.arguments = [
            "ip", "netns", "exec", ns, "unshare", "--mount", "--propagation", "private",
            "sh", "-c", sandboxedProc, Binaries.path("downloader"), "--runtime-dir", dir.runtimeDir,
            "--state-dir", dir.stateDir, "--origin", base,
        ]
        var env = ProcessInfo.processInfo.environment
        env["CASSETTE_CLIENT_TOKEN"] = "demo"
        env["CASSETTE_CLIENT_SECRET"] = "demo"
        for key in ["NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"] { env.removeValue(forKey: key) }
        downloader.environment = env
        let log = dir.path + "/downloader.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        downloader.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        downloader.standardError = downloader.standardOutput
        try downloader.run()
        processes.append(downloader)
        var client: RPCClient?
        try await waitUntil("downloader socket") {
            client = try? await RPCClient.connect(path: dir.socketPath("downloader"))
            if let c = client, (try? await c.call("network.get")) != nil { return true }
            return false
        }
        let rpc = try XCTUnwrap(client)
        defer { Task { await rpc.close() } }
        func network() async throws -> JSONValue { try await rpc.call("network.get") }

        let wifi = try await network()
        XCTAssertEqual(wifi["type"]?.stringValue, "wifi", "\(wifi)")
        XCTAssertEqual(wifi["interface"]?.stringValue, "wlan0")
        XCTAssertEqual(wifi["source"]?.stringValue, "kernel")

        // Mid-download, the default route moves to the modem.
        let faults = try JSONSerialization.data(withJSONObject: ["path": "/media/", "faults": [["bytesPerSecond": 50_000, "repeat": 1]]])
        _ = try await HTTPClient().send(
            HTTPRequest(
                method: "POST", url: base + "/_control/faults", headers: ["Content-Type": "application/json"],
                body: Array(faults), timeoutSeconds: 10))
        let product = try await PolicyTest.product(base, "tr-1")
        let part = dir.stateDir + "/media/tracks/" + PolicyTest.fileName(product.url) + ".part"
        let token = try PolicyTest.token(try await rpc.call("offline.add", ["productId": "tr-1"]))
        try await waitUntil("bytes in the .part") { PolicyTest.fileSize(part) > 40_000 }
        let moved = Date()
        XCTAssertEqual(PolicyTest.run(["ip", "-n", ns, "route", "replace", "default", "via", "10.213.2.1", "dev", "wwan0"]), 0)
        try await waitUntil("cellular seen", timeout: 5) { try await network()["type"]?.stringValue == "cellular" }
        let seen = Date().timeIntervalSince(moved)
        try await waitUntil("transfer stopped", timeout: 5) {
            let s = try await rpc.call("offline.status", ["token": .string(token)])
            let active = try await rpc.call("service.status")["activeDownloads"]?.intValue
            return s["error"]?.stringValue == "CellularNotAllowed" && active == 0
        }
        let stopped = Date().timeIntervalSince(moved)
        let held = PolicyTest.fileSize(part)
        try await Task.sleep(nanoseconds: 1_500_000_000)
        XCTAssertEqual(PolicyTest.fileSize(part), held, "bytes still arrive over the modem route")
        XCTAssertLessThan(seen, 5, "route change not seen within 5 s")
        XCTAssertLessThan(stopped - seen, 2, "transfer not stopped within 2 s of the change being seen")

        // Back to Wi-Fi: resumes with Range and completes.
        _ = try await HTTPClient().send(HTTPRequest(method: "DELETE", url: base + "/_control/faults", timeoutSeconds: 10))
        XCTAssertEqual(PolicyTest.run(["ip", "-n", ns, "route", "replace", "default", "via", "10.213.1.1", "dev", "wlan0"]), 0)
        try await waitUntil("cached after the route came back", timeout: 30) {
            try await rpc.call("offline.status", ["token": .string(token)])["state"]?.stringValue == "cached"
        }
        let counts = try await PolicyTest.mediaCounts(base, PolicyTest.fileName(product.url))
        XCTAssertEqual(counts.ranged, 1, "\(counts)")
        XCTAssertLessThanOrEqual(counts.full, 1, "downloaded twice in full")
        XCTAssertEqual(try sha256(ofFile: dir.stateDir + "/media/tracks/" + PolicyTest.fileName(product.url)), product.sha256)

        // No default route at all: none.
        XCTAssertEqual(PolicyTest.run(["ip", "-n", ns, "route", "del", "default"]), 0)
        try await waitUntil("no network seen", timeout: 5) { try await network()["type"]?.stringValue == "none" }
        print(
            "netns: wwan0 route seen in \(String(format: "%.2f", seen)) s, transfer stopped \(String(format: "%.2f", stopped - seen)) s later at \(held)/\(product.size) bytes; resumed on wlan0 with \(counts.ranged) Range answer"
        )
    }
}
