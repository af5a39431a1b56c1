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
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else { return .stale }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        return rc == 0 ? .live : .stale
    }
}
