import Wire

/// The kind of link the default route uses, as the policy sees it.
enum NetworkType: String, Sendable, Codable, CaseIterable {
    case wifi, ethernet, cellular, none
}

/// What the network monitor believes right now: a value, so it can be compared (a change is
/// an event) and handed to the policy without locks.
struct NetworkState: Sendable, Equatable {
    var type: NetworkType
    /// The link costs money per byte: always true on cellular, else what NetworkManager says.
    var metered: Bool
    /// The default route's interface, when known.
    var interface: String?
    /// Which source answered: `override`, `networkmanager` or `kernel`.
    var source: String

    var online: Bool { type != .none }

    static let offline = NetworkState(type: .none, metered: false, interface: nil, source: "kernel")

    var json: [String: JSONValue] {
        [
            "type": .string(type.rawValue), "online": .bool(online), "metered": .bool(metered),
            "interface": interface.map(JSONValue.string) ?? .null, "source": .string(source),
        ]
    }
}

/// One way of learning the network state. `read()` answers nil when the source has no
/// opinion (NetworkManager not running), so the monitor asks the next one, and throws when it
/// could not look at all (a file it cannot open): then nobody knows, and the monitor keeps
/// the state it had rather than calling it "no network".
protocol NetworkSource: Sendable {
    var name: String { get }
    func read() throws -> NetworkState?
}

/// A source that could not look: which one, and why.
struct NetworkSourceError: Error, Sendable, Equatable, CustomStringConvertible {
    var source: String
    var reason: String
    var description: String { "\(source): \(reason)" }
}
