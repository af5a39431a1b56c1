import Foundation
import Glibc
import Wire

/// Why a socket could not be reached, in words that say what to do. The RPC client reports
/// only "cannot connect"; one more non-blocking `connect()` tells the cause by its errno.
enum ConnectFailure {
    /// The group the shipped socket units give the sockets.
    static let defaultGroup = "cassette-clients"

    static func diagnose(path: String, service: ServiceName, underlying: Error) -> CtlFailure {
        let code = probe(path)
        return describe(errno: code, path: path, service: service, group: socketGroup(path), underlying: "\(underlying)")
    }

    /// The mapping from errno to the message (a pure function, for the tests).
    static func describe(errno code: Int32, path: String, service: ServiceName, group: String, underlying: String) -> CtlFailure {
        let exit = ExitStatus.unavailable
        let unit = "cassette-\(service.rawValue)"
        switch code {
        case EACCES, EPERM:
            return CtlFailure(
                name: "PermissionDenied",
                message: "permission denied on \(path): add your user to the \(group) group (sudo usermod -aG \(group) $USER) and log in again",
                exit: exit, service: service)
        case ENOENT, ENOTDIR:
            return CtlFailure(
                name: "NoSocket",
                message:
                    "cannot reach the \(service.rawValue) at \(path): no socket there; is it running? (`systemctl status \(unit).socket`, or --runtime-dir/CASSETTE_RUNTIME_DIR point elsewhere)",
                exit: exit, service: service)
        case ECONNREFUSED:
            return CtlFailure(
                name: "ConnectionRefused",
                message:
                    "cannot reach the \(service.rawValue) at \(path): nothing listens there; is it running? (`systemctl status \(unit).socket \(unit).service`)",
                exit: exit, service: service)
        case EAGAIN:
            return CtlFailure(
                name: "Busy", message: "the \(service.rawValue) at \(path) accepts no more connections right now (its backlog is full); try again",
                exit: exit, service: service)
        default:
            let cause = code == 0 ? underlying : String(cString: strerror(code))
            return CtlFailure(
                name: "Unreachable", message: "cannot reach the \(service.rawValue) at \(path): is it running? (\(cause))",
                exit: exit, service: service)
        }
    }

    /// The errno of a fresh connect to `path`, 0 when it succeeds now. Non-blocking, so a full
    /// backlog answers EAGAIN instead of waiting.
    static func probe(_ path: String) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return errno }
        defer { close(fd) }
        guard let rc = UnixSocketAddress.withSockaddr(path, { connect(fd, $0, $1) }) else { return ENAMETOOLONG }
        return rc == 0 ? 0 : errno
    }

    /// The socket's group, the one to join; the shipped group when the socket belongs to root's
    /// group or has none that resolves (a test folder, a missing socket).
    static func socketGroup(_ path: String) -> String {
        var st = stat()
        guard stat(path, &st) == 0, st.st_gid != 0, let group = getgrgid(st.st_gid), let name = group.pointee.gr_name else {
            return defaultGroup
        }
        return String(cString: name)
    }
}
