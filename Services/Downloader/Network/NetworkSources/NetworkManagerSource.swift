import Foundation
import Synchronization
import Systemd

/// NetworkManager over D-Bus, where it runs: its primary connection's type, `Metered` and
/// overall `State`. Answers nil when there is no system bus or NetworkManager is not on it
/// (then the kernel route decides), and after such a failure waits `retrySeconds` before
/// asking the bus again, so a device without NetworkManager pays nothing per poll.
final class NetworkManagerSource: NetworkSource {
    var name: String { "networkmanager" }
    let retrySeconds: Double
    private struct State {
        var bus: SystemBus?
        var nextTry: Double = 0
    }
    private let state = Mutex(State())

    init(retrySeconds: Double = 30) {
        self.retrySeconds = retrySeconds
    }

    static let service = "org.freedesktop.NetworkManager"
    static let path = "/org/freedesktop/NetworkManager"

    func read() -> NetworkState? {
        state.withLock { s -> NetworkState? in
            let now = Date().timeIntervalSince1970
            guard s.bus != nil || now >= s.nextTry else { return nil }
            do {
                let bus = try s.bus ?? SystemBus()
                s.bus = bus
                let nmState = try bus.uint32Property(destination: Self.service, path: Self.path, interface: Self.service, member: "State")
                let type = try bus.stringProperty(
                    destination: Self.service, path: Self.path, interface: Self.service,
                    member: "PrimaryConnectionType")
                let metered = try bus.uint32Property(destination: Self.service, path: Self.path, interface: Self.service, member: "Metered")
                return Self.classify(state: nmState, primaryConnectionType: type, metered: metered)
            } catch {
                s.bus = nil
                s.nextTry = now + retrySeconds
                return nil
            }
        }
    }

    /// NetworkManager's answer as a network state. `state` is NMState (70 connected globally,
    /// 60 site, 50 local; below: not connected); `metered` is NMMetered (1 yes, 3 guessed yes).
    /// Connection types: `802-11-wireless` → Wi-Fi; `gsm`, `cdma` (modems) and `bluetooth`
    /// (phone tethering) → cellular; anything else that carries traffic → Ethernet.
    static func classify(state: UInt32, primaryConnectionType: String, metered: UInt32) -> NetworkState {
        guard state >= 50, !primaryConnectionType.isEmpty else {
            return NetworkState(type: .none, metered: false, interface: nil, source: "networkmanager")
        }
        let type: NetworkType
        switch primaryConnectionType {
        case "802-11-wireless", "wifi-p2p": type = .wifi
        case "gsm", "cdma", "bluetooth", "wwan": type = .cellular
        default: type = .ethernet
        }
        let isMetered = type == .cellular || metered == 1 || metered == 3
        return NetworkState(type: type, metered: isMetered, interface: nil, source: "networkmanager")
    }
}
