import Foundation

/// The kernel's default route (`/proc/net/route`, then `/proc/net/ipv6_route`) and its
/// interface classified from sysfs. Always answers: no usable default route is `none`.
/// Reading two small proc files is cheap enough to poll every second, which keeps changes
/// well inside the 5 s the policy promises without a netlink socket.
struct KernelRouteSource: NetworkSource {
    var name: String { "kernel" }
    var procDirectory = "/proc/net"
    var sysfs = "/sys/class/net"

    func read() -> NetworkState? {
        let ipv4 = (try? String(contentsOfFile: procDirectory + "/route", encoding: .utf8)).map(Self.defaultRoutes) ?? []
        let ipv6 = (try? String(contentsOfFile: procDirectory + "/ipv6_route", encoding: .utf8)).map(Self.defaultRoutesIPv6) ?? []
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
                  let flags = Int(f[3], radix: 16), flags & 0x1 != 0 else { return nil }
            return Route(interface: String(f[0]), metric: Int(f[6]) ?? 0)
        }
    }

    /// IPv6 default routes: `::/0` through a real interface (not the `lo` unreachable entries).
    static func defaultRoutesIPv6(_ text: String) -> [Route] {
        text.split(separator: "\n").compactMap { line in
            let f = line.split(separator: " ", omittingEmptySubsequences: true)
            guard f.count >= 10, f[0] == String(repeating: "0", count: 32), f[1] == "00",
                  f[9] != "lo", let flags = Int(f[8], radix: 16), flags & 0x1 != 0,
                  flags & 0x200 == 0 /* RTF_REJECT */ else { return nil }
            return Route(interface: String(f[9]), metric: Int(f[5], radix: 16) ?? 0)
        }
    }

    private func isUp(_ interface: String) -> Bool {
        let state = (try? String(contentsOfFile: "\(sysfs)/\(interface)/operstate", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? "unknown"
        return !["down", "lowerlayerdown", "notpresent"].contains(state)
    }
}
