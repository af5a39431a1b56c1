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
