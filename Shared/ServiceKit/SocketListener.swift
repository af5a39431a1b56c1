import Foundation
import Logging
import StateDB
import Systemd
import Wire

/// Decides where a service listens: the socket systemd handed over, or its own path.
enum SocketListener {
    /// Blocking (the group database, a directory, a probe connect): call through `BlockingIO`.
    /// - Returns: where to listen and, for a self-bound socket, its group (see `group(for:logger:)`),
    ///   which a runtime dir created here (0750) gets too: its members reach the socket, and
    ///   nobody else can even list the folder.
    /// - Throws: `alreadyRunning` when a live instance answers on the path (two daemons
    ///   must not share one socket); `socketUnavailable` when the path is taken by a non-socket.
    static func prepare(settings: ServiceSettings, logger: Logger) throws(DaemonError) -> (source: ListenerSource, group: gid_t?) {
        let inherited = SocketActivation.inheritedSockets()
        if !inherited.isEmpty {
            guard let socket = SocketActivation.socket(for: settings.name, in: inherited) else {
                throw DaemonError(
                    .socketUnavailable,
                    "Got \(inherited.count) sockets from the service manager (\(inherited.map(\.name))) but none named '\(settings.name)'.")
            }
            return (.inherited(fd: socket.fd, path: settings.socketPath), nil)
        }
        let group = try group(for: settings, logger: logger)
        do {
            try PrivateDirectory.create(settings.runtimeDir, group: group)
        } catch {
            throw DaemonError(.socketUnavailable, "Cannot create runtime dir \(settings.runtimeDir): \(error)")
        }
        switch UnixSocketProbe.status(of: settings.socketPath) {
        case .live:
            throw DaemonError(
                .alreadyRunning,
                "Another \(settings.name) already answers on \(settings.socketPath); stop it first or use another --runtime-dir.")
        case .stale:
            // Left behind by a process that died without cleaning up: nobody listens, so replace it.
            unlink(settings.socketPath)
        case .notASocket:
            throw DaemonError(.socketUnavailable, "\(settings.socketPath) exists and is not a socket; refusing to replace it.")
        case .missing:
            break
        }
        return (.path(settings.socketPath), group)
    }

    /// The socket group to use: the configured one, else `cassette-clients` when it exists.
    /// A default the service cannot use (the group is missing, or the service's user is not in
    /// it and so may not hand it its socket) falls back to the service's own group.
    static func group(for settings: ServiceSettings, logger: Logger) throws(DaemonError) -> gid_t? {
        guard let gid = try settings.socketGroup.resolve() else { return nil }
        guard getuid() == 0 || Self.isMember(of: gid) else {
            let name = settings.socketGroup.name ?? ""
            if settings.socketGroup.explicit {
                throw DaemonError(.configInvalid, "The service's user is not in socket group '\(name)', so it cannot give the group its socket.")
            }
            logger.warning("the service's user is not in socket group '\(name)'; the socket keeps the service's own group")
            return nil
        }
        return gid
    }

    private static func isMember(of gid: gid_t) -> Bool {
        if getegid() == gid { return true }
        let count = getgroups(0, nil)
        guard count > 0 else { return false }
        var groups = [gid_t](repeating: 0, count: Int(count))
        let got = getgroups(count, &groups)
        return groups.prefix(Int(max(0, got))).contains(gid)
    }

    /// Mode 0660 on a self-bound socket, in `group` when given: the service's user and the
    /// group's members (the device apps) only. Bind already ran under umask 0117; this makes
    /// the mode exact whatever the umask was.
    static func restrictPermissions(_ source: ListenerSource, group: gid_t?) throws(DaemonError) {
        guard case .path(let path) = source else { return }
        if let group, chown(path, uid_t.max, group) != 0 {
            throw DaemonError(.socketUnavailable, "Cannot give \(path) group \(group): \(String(cString: strerror(errno))).")
        }
        chmod(path, 0o660)
    }

    /// Removes a self-bound socket on a clean exit; an inherited one is systemd's to keep.
    static func cleanUp(_ source: ListenerSource) {
        if case .path(let path) = source { unlink(path) }
    }
}
