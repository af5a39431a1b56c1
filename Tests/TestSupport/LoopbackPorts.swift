import Glibc

/// A loopback TCP port that refuses every connection: bound (so nothing else takes it) but not
/// listening, so a connect gets a reset at once. Closed on deinit.
public final class RefusingPort {
    public let port: Int
    private let fd: Int32

    public init() throws {
        (fd, port) = try bindLoopback()
    }

    public var url: String { "http://127.0.0.1:\(port)" }

    deinit { close(fd) }
}

/// A loopback TCP port that listens but never accepts nor answers: connections complete in the
/// kernel (or wait in its queue) and then hear nothing, like an origin behind a link that drops
/// packets. Closed on deinit.
public final class SilentPort {
    public let port: Int
    private let fd: Int32

    public init() throws {
        (fd, port) = try bindLoopback()
        guard listen(fd, 1) == 0 else {
            close(fd)
            throw HarnessError("listen failed: errno \(errno)")
        }
    }

    public var url: String { "http://127.0.0.1:\(port)" }

    deinit { close(fd) }
}

private func bindLoopback() throws -> (Int32, Int) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw HarnessError("socket() failed: errno \(errno)") }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard bound == 0, named == 0 else {
        let e = errno
        close(fd)
        throw HarnessError("binding a loopback port failed: errno \(e)")
    }
    return (fd, Int(UInt16(bigEndian: address.sin_port)))
}

/// Free ports and connect checks, for child servers (nginx, a proxy) that bind a port themselves.
public enum LoopbackPort {
    /// A port the kernel just handed out on 127.0.0.1 (bound, then released); the caller retries
    /// with another when its server's bind then fails.
    public static func free() throws -> Int {
        let (fd, port) = try bindLoopback()
        close(fd)
        return port
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    public static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}
