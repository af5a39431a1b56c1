import ServiceKit
import Systemd
import Wire

/// The config key `player.mprisBus`: which D-Bus bus the player answers MPRIS on.
enum MPRISBusChoice: Sendable, Equatable {
    /// MPRIS is not served.
    case off
    case bus(BusAddress)

    /// "system" (nil: the default), "session", "off" or a D-Bus address ("unix:path=/run/x").
    init(config value: JSONValue?) throws(DaemonError) {
        guard let value else {
            self = .bus(.system)
            return
        }
        switch value.stringValue {
        case "system": self = .bus(.system)
        case "session": self = .bus(.session)
        case "off": self = .off
        case let address? where Self.looksLikeAddress(address): self = .bus(.address(address))
        default:
            throw DaemonError(
                .configInvalid, "player.mprisBus must be \"system\", \"session\", \"off\" or a D-Bus address such as \"unix:path=/run/x\".")
        }
    }

    /// A D-Bus address is `transport:key=value[,key=value…]`, possibly several joined by ';'.
    static func looksLikeAddress(_ text: String) -> Bool {
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex else { return false }
        return text[text.index(after: colon)...].contains("=")
    }

    /// As `service.status` names it: "system", "session", "off" or the address.
    var label: String {
        switch self {
        case .off: "off"
        case .bus(.system): "system"
        case .bus(.session): "session"
        case .bus(.address(let address)): address
        }
    }
}
