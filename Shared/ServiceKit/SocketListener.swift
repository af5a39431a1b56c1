import Foundation
import Systemd
import Wire

/// Decides where a service listens: the socket systemd handed over, or its own path.
enum SocketListener {
    /// - Throws: `alreadyRunning` when a live instance answers on the path (two daemons
    ///   must not share one socket); `socketUnavailable` when the path is taken by a non-socket.
    static func prepare(settings: ServiceSettings) throws(DaemonError) -> ListenerSource {
        let inherited = SocketActivation.inheritedSockets()
        if !inherited.isEmpty {
            guard let socket = SocketActivation.socket(for: settings.name, in: inherited) else {
                throw DaemonError(.socketUnavailable,
                    "Got \(inherited.count) sockets from the service manager (\(inherited.map(\.name))) but none named '\(settings.name)'.")
            }
            return .inherited(fd: socket.fd, path: settings.socketPath)
        }
        do {
            try FileManager.default.createDirectory(atPath: settings.runtimeDir, withIntermediateDirectories: true)
        } catch {
            throw DaemonError(.socketUnavailable, "Cannot create runtime dir \(settings.runtimeDir): \(error.localizedDescription)")
        }
        switch UnixSocketProbe.status(of: settings.socketPath) {
        case .live:
            throw DaemonError(.alreadyRunning,
                "Another \(settings.name) already answers on \(settings.socketPath); stop it first or use another --runtime-dir.")
        case .stale:
            // Left behind by a process that died without cleaning up: nobody listens, so replace it.
            unlink(settings.socketPath)
        case .notASocket:
            throw DaemonError(.socketUnavailable, "\(settings.socketPath) exists and is not a socket; refusing to replace it.")
        case .missing:
            break
        }
        return .path(settings.socketPath)
    }

    /// Mode 0660 on a self-bound socket: the service's user and group (the device app) only.
    /// Bind already ran under umask 0117; this makes the mode exact whatever the umask was.
    static func restrictPermissions(_ source: ListenerSource) {
        if case .path(let path) = source { chmod(path, 0o660) }
    }

    /// Removes a self-bound socket on a clean exit; an inherited one is systemd's to keep.
    static func cleanUp(_ source: ListenerSource) {
        if case .path(let path) = source { unlink(path) }
    }
}
