import Foundation
import Glibc
import Wire

/// Plays systemd's side of sd_notify(3): a datagram socket whose path goes into
/// `NOTIFY_SOCKET`, so a test sees exactly what a service tells its manager.
public final class NotifyListener {
    public let path: String
    private let fd: Int32
    public private(set) var messages: [String] = []

    public init(path: String) throws {
        self.path = path
        unlink(path)
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket() failed") }
        let rc = UnixSocketAddress.withSockaddr(path) { bind(fd, $0, $1) } ?? -1
        guard rc == 0 else { throw HarnessError("bind(\(path)) failed: errno \(errno)") }
    }

    deinit {
        close(fd)
        unlink(path)
    }

    /// Waits for a datagram containing the line `assignment` (e.g. "READY=1").
    public func wait(for assignment: String, timeout: Double = 15) -> Bool {
        if messages.contains(where: { $0.split(separator: "\n").contains(Substring(assignment)) }) { return true }
        let deadline = Date().addingTimeInterval(timeout)
        var buf = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(max(1, deadline.timeIntervalSinceNow * 1000))) > 0 else { continue }
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { continue }
            let text = String(decoding: buf[0..<n], as: UTF8.self)
            messages.append(text)
            if text.split(separator: "\n").contains(Substring(assignment)) { return true }
        }
        return false
    }
}
