import Foundation
import Glibc

/// The kernel's default route (`route`, then `ipv6_route`, of the process's own network
/// namespace) and its interface classified from sysfs. No usable default route is `none`.
/// Reading two small proc files is cheap enough to poll every second, which keeps changes
/// well inside the 5 s the policy promises without a netlink socket.
///
/// The files are read under `/proc/self/net`, not `/proc/net`: the service's unit mounts
/// `/proc` with `ProcSubset=pid`, which hides every top-level entry but the processes' own
/// folders, so `/proc/net` does not exist there while `/proc/self/net` does.
///
/// A route file that cannot be read (out of descriptors, say) is not "no network": `read`
/// throws, and the monitor keeps the state it had.
struct KernelRouteSource: NetworkSource {
    var name: String { "kernel" }
    var procDirectory = "/proc/self/net"
    var sysfs = "/sys/class/net"

    func read() throws -> NetworkState? {
        let ipv4 = Self.defaultRoutes(try Self.contents(of: procDirectory + "/route"))
        // A kernel built without IPv6 has no `ipv6_route`: that is no IPv6 route, not a failure.
        let ipv6Path = procDirectory + "/ipv6_route"
        let ipv6 = FileManager.default.fileExists(atPath: ipv6Path) ? Self.defaultRoutesIPv6(try Self.contents(of: ipv6Path)) : []
        // Lowest metric wins, as in the kernel's own choice; links that are down do not count.
        let usable = (ipv4 + ipv6).filter { isUp($0.interface) }.sorted { $0.metric < $1.metric }
        guard let route = usable.first else { return NetworkState(type: .none, metered: false, interface: nil, source: name) }
        let type = InterfaceClassifier.classify(InterfaceClassifier.facts(of: route.interface, sysfs: sysfs))
        return NetworkState(type: type, metered: type == .cellular, interface: route.interface, source: name)
    }

    struct Route: Equatable, Sendable {
        var interface: String
        var metric: Int
    }

    /// IPv4 default routes: destination and mask 0, flag RTF_UP (0x1).
    static func defaultRoutes(_ text: String) -> [Route] {
        text.split(separator: "\n").dropFirst().compactMap { line in
            let f = line.split(whereSeparator: { $0 == "\t" || $0 == " " })
            guard f.count >= 8, f[1] == "00000000", f[7] == "00000000",
                let flags = Int(f[3], radix: 16), flags & 0x1 != 0
            else { return nil }
            return Route(interface: String(f[0]), metric: Int(f[6]) ?? 0)
        }
    }

    /// IPv6 default routes: `::/0` through a real interface (not the `lo` unreachable entries).
    static func defaultRoutesIPv6(_ text: String) -> [Route] {
        text.split(separator: "\n").compactMap { line in
            let f = line.split(separator: " ", omittingEmptySubsequences: true)
            guard f.count >= 10, f[0] == String(repeating: "0", count: 32), f[1] == "00",
                f[9] != "lo", let flags = Int(f[8], radix: 16), flags & 0x1 != 0,
                flags & 0x200 == 0 /* RTF_REJECT */
            else { return nil }
            return Route(interface: String(f[9]), metric: Int(f[5], radix: 16) ?? 0)
        }
    }

    /// The whole of a small proc file. Plain `open`/`read` rather than Foundation's readers,
    /// so a failure keeps its errno ("Too many open files") for the log.
    private static func contents(of path: String) throws -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw unreadable(path, errno) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                throw unreadable(path, errno)
            }
            bytes += chunk[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func unreadable(_ path: String, _ code: Int32) -> NetworkSourceError {
        NetworkSourceError(source: "kernel", reason: "cannot read \(path): \(String(cString: strerror(code)))")
    }

    private func isUp(_ interface: String) -> Bool {
        let state =
            (try? String(contentsOfFile: "\(sysfs)/\(interface)/operstate", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? "unknown"
        return !["down", "lowerlayerdown", "notpresent"].contains(state)
    }
}
