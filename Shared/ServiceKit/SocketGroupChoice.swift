import Glibc

/// The group a self-bound socket is given, so that apps in that group, and nobody else besides
/// the service's own user, may connect. The client group holds no other right: the catalog and
/// the config stay the service group's (docs/protocol.md, "Transport").
public struct SocketGroupChoice: Sendable, Equatable {
    /// The group apps join to use the services; the packaged sysusers.d entry creates it.
    public static let defaultName = "cassette-clients"

    /// nil: the socket keeps the service's own group.
    public var name: String?
    /// Set by the flag, the environment or the config file: a group that does not exist, or
    /// that the service may not hand its socket to, stops the service (exit 78). The default
    /// applies only when the group exists, and a failure to use it is logged, not fatal.
    public var explicit: Bool

    /// - Parameter setting: the flag, variable or config value; nil for the default, "" for none.
    public init(setting: String?) {
        switch setting {
        case nil: (name, explicit) = (Self.defaultName, false)
        case ""?: (name, explicit) = (nil, true)
        case let value?: (name, explicit) = (value, true)
        }
    }

    /// The group id to use; nil when the socket keeps the service's group. Reads the group
    /// database (NSS): blocking, so call it through `BlockingIO`.
    /// - Throws: `configInvalid` when an explicitly named group does not exist.
    func resolve() throws(DaemonError) -> gid_t? {
        guard let name else { return nil }
        if let gid = Self.groupID(named: name) { return gid }
        guard explicit else { return nil }
        throw DaemonError(.configInvalid, "Socket group '\(name)' does not exist (socketGroup, --socket-group or CASSETTE_SOCKET_GROUP).")
    }

    static func groupID(named name: String) -> gid_t? {
        var group = group()
        var result: UnsafeMutablePointer<group>? = nil
        var size = 16_384
        while true {
            var buffer = [CChar](repeating: 0, count: size)
            let rc = getgrnam_r(name, &group, &buffer, buffer.count, &result)
            // A group with very many members needs a bigger buffer for its member list.
            if rc == ERANGE, size < 1 << 24 {
                size *= 4
                continue
            }
            guard rc == 0, result != nil else { return nil }
            return group.gr_gid
        }
    }
}
