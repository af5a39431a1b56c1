import Foundation

/// Sorts a network interface into Wi-Fi, cellular or Ethernet from what sysfs says about it.
/// Pure over its inputs so the rules are unit-tested without the hardware.
enum InterfaceClassifier {
    /// What sysfs tells about one interface (`/sys/class/net/<name>`).
    struct Facts: Sendable, Equatable {
        var name: String
        /// `wireless/` or `phy80211` exists: the kernel's own mark of an 802.11 device.
        var wireless = false
        /// `DEVTYPE=` from `uevent` (`wlan`, `wwan`, `bridge`, …), when present.
        var devtype: String?
    }

    /// Kernel marks first (`wireless`, `phy80211`, `DEVTYPE=wlan` → Wi-Fi; `DEVTYPE=wwan` →
    /// cellular), then names: `wwan*`, `ppp*`, `rmnet*` (modems) → cellular; `wl*` (the
    /// classic and predictable Wi-Fi names, for drivers that set no mark) → Wi-Fi; anything
    /// else is Ethernet (wired, USB tethering, virtual links), which is never metered.
    static func classify(_ facts: Facts) -> NetworkType {
        if facts.wireless || facts.devtype == "wlan" { return .wifi }
        if facts.devtype == "wwan" { return .cellular }
        let name = facts.name
        if ["wwan", "ppp", "rmnet"].contains(where: { name.hasPrefix($0) }) { return .cellular }
        if name.hasPrefix("wl") { return .wifi }
        return .ethernet
    }

    /// Reads the facts of `name` under `sysfs` (normally `/sys/class/net`).
    static func facts(of name: String, sysfs: String = "/sys/class/net") -> Facts {
        let base = sysfs + "/" + name
        let fm = FileManager.default
        var facts = Facts(name: name)
        facts.wireless = fm.fileExists(atPath: base + "/wireless") || fm.fileExists(atPath: base + "/phy80211")
        if let uevent = try? String(contentsOfFile: base + "/uevent", encoding: .utf8) {
            for line in uevent.split(separator: "\n") where line.hasPrefix("DEVTYPE=") {
                facts.devtype = String(line.dropFirst("DEVTYPE=".count))
            }
        }
        return facts
    }
}
