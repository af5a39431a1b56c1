import Foundation
import Glibc
import Wire

/// A blocking Unix-socket client that sends exactly the bytes a test asks for: split frames,
/// bad lengths, invalid UTF-8. `RPCClient` would refuse to produce those.
public final class RawSocket {
    public let fd: Int32

    public init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket() failed: errno \(errno)") }
        let rc = UnixSocketAddress.withSockaddr(path) { connect(fd, $0, $1) } ?? -1
        guard rc == 0 else {
            let e = errno
            Glibc.close(fd)
            throw HarnessError("connect(\(path)) failed: errno \(e)")
        }
    }

    deinit { Glibc.close(fd) }

    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw HarnessError("send failed: errno \(errno)") }
            offset += n
        }
    }

    /// Length prefix + payload.
    public static func frame(_ payload: [UInt8]) -> [UInt8] {
        let n = UInt32(payload.count)
        return [UInt8(n >> 24), UInt8((n >> 16) & 0xff), UInt8((n >> 8) & 0xff), UInt8(n & 0xff)] + payload
    }

    public static func frame(_ json: String) -> [UInt8] { frame(Array(json.utf8)) }

    public static func request(id: Int, method: String, params: String? = nil) -> [UInt8] {
        let p = params.map { ",\"params\":\($0)" } ?? ""
        return frame("{\"jsonrpc\":\"2.0\",\"id\":\(id),\"method\":\"\(method)\"\(p)}")
    }

    public func sendFrame(_ json: String) throws { try send(Self.frame(json)) }

    /// Reads one frame; nil when the peer closed the connection first.
    public func readFrame(timeout: Double = 10) throws -> JSONValue? {
        guard let header = try read(exactly: 4, timeout: timeout) else { return nil }
        let n = Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
        guard let body = try read(exactly: n, timeout: timeout) else { return nil }
        return try JSONCoding.decoder().decode(JSONValue.self, from: Data(body))
    }

    /// True when the peer closes within `timeout` (reads drain anything sent before).
    public func waitClosed(timeout: Double = 10) throws -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        var buf = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            guard try poll(timeout: deadline.timeIntervalSinceNow) else { return false }
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return true }
            if n < 0 { return errno == ECONNRESET }
        }
        return false
    }

    private func read(exactly count: Int, timeout: Double) throws -> [UInt8]? {
        var out = [UInt8]()
        out.reserveCapacity(count)
        let deadline = Date().addingTimeInterval(timeout)
        var buf = [UInt8](repeating: 0, count: min(max(count, 1), 65536))
        while out.count < count {
            guard try poll(timeout: deadline.timeIntervalSinceNow) else {
                throw HarnessError("timed out after \(timeout)s waiting for \(count - out.count) bytes")
            }
            let want = min(buf.count, count - out.count)
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, want, 0) }
            if n == 0 { return nil }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == ECONNRESET { return nil }
                throw HarnessError("recv failed: errno \(errno)")
            }
            out += buf[0..<n]
        }
        return out
    }

    private func poll(timeout: Double) throws -> Bool {
        guard timeout > 0 else { return false }
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let rc = Glibc.poll(&p, 1, Int32(timeout * 1000))
        if rc < 0 && errno != EINTR { throw HarnessError("poll failed: errno \(errno)") }
        return rc > 0
    }
}

public struct HarnessError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
