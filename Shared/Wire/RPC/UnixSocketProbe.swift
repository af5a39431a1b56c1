#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Answers "does a live server listen on this path?" without NIO, so a starting service can
/// tell a stale socket file (left by a killed process: replace it) from a running instance
/// (refuse to start, or two daemons would fight over one path).
public enum UnixSocketProbe {
    public enum Status: Equatable, Sendable { case missing, stale, live, notASocket }

    public static func status(of path: String) -> Status {
        var st = stat()
        guard lstat(path, &st) == 0 else { return .missing }
        guard (st.st_mode & S_IFMT) == S_IFSOCK else { return .notASocket }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return .stale }
        defer { close(fd) }
        let rc = UnixSocketAddress.withSockaddr(path) { connect(fd, $0, $1) } ?? -1
        return rc == 0 ? .live : .stale
    }
}

/// Builds a `sockaddr_un` for a path, the one fiddly part of raw Unix-socket calls.
public enum UnixSocketAddress {
    /// Calls `body` with the address and its length; nil when the path does not fit
    /// `sun_path` (108 bytes including the terminating NUL).
    public static func withSockaddr<T>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T? {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }
}
