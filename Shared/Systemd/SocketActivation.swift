import CSystemd

/// Sockets handed over by systemd (or a supervisor acting like it) through `LISTEN_FDS`,
/// `LISTEN_PID` and `LISTEN_FDNAMES` (sd_listen_fds(3)).
public enum SocketActivation {
    public struct Socket: Sendable, Equatable {
        /// Owned by this process from now on; the path it listens on is not ours to unlink.
        public let fd: Int32
        public let name: String
    }

    /// The sockets passed to this process, empty when started without activation or when
    /// `LISTEN_PID` names another process. Clears the variables so children do not inherit them.
    public static func inheritedSockets() -> [Socket] {
        var names: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = nil
        let count = sd_listen_fds_with_names(1, &names)
        guard count > 0 else { return [] }
        defer {
            if let names {
                for i in 0..<Int(count) { free(names[i]) }
                free(names)
            }
        }
        let start = cassette_sd_listen_fds_start()
        return (0..<Int(count)).map { i in
            let name = names?[i].map { String(cString: $0) } ?? "unknown"
            return Socket(fd: start + Int32(i), name: name)
        }
    }

    /// Picks this service's socket: the one named `<service>` or `<service>.socket`, else the
    /// only one passed (systemd names sockets after their unit unless `FileDescriptorName=` is set).
    public static func socket(for service: String, in sockets: [Socket]) -> Socket? {
        if let named = sockets.first(where: { $0.name == service || $0.name == "\(service).socket" || $0.name == "cassette-\(service).socket" }) {
            return named
        }
        return sockets.count == 1 ? sockets[0] : nil
    }
}
