import Foundation
import Glibc
import TestSupport

/// One `GET` over loopback TCP read slowly, as a client with little buffer space would: a small
/// receive buffer, a few KiB at a time, until `fastAfter`, then as fast as it comes. It notes
/// when the server ended the connection (a reset or its end of stream, seen by `poll` even
/// while unread bytes remain) and how much of the body arrived. Blocking, on a thread of its own.
final class SlowHTTPReader: @unchecked Sendable {
    struct Outcome: Sendable {
        var status: Int?
        var contentLength: Int?
        var bodyBytes: Int
        /// When the server's reset or end of stream was first seen.
        var endedAt: Date?
        /// The connection was reset (not ended cleanly).
        var reset: Bool
        var complete: Bool { contentLength.map { bodyBytes == $0 } ?? false }
    }

    /// Starts reading `url` (`http://127.0.0.1:PORT/path`) on a thread of its own; the outcome
    /// arrives once the connection ended, or after `limit` seconds.
    static func read(_ url: String, bytesPerSecond: Int, fastAfter: Date, limit: Double = 60) async throws -> Outcome {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                continuation.resume(with: Result { try run(url, bytesPerSecond: bytesPerSecond, fastAfter: fastAfter, limit: limit) })
            }
            thread.start()
        }
    }

    private static func run(_ url: String, bytesPerSecond: Int, fastAfter: Date, limit: Double) throws -> Outcome {
        guard let parsed = URLComponents(string: url), let port = parsed.port else { throw HarnessError("bad URL \(url)") }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket() failed: errno \(errno)") }
        defer { close(fd) }
        var small: Int32 = 16 << 10
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw HarnessError("connect to \(url) failed: errno \(errno)") }
        let request = Array("GET \(parsed.percentEncodedPath) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
        guard send(fd, request, request.count, Int32(MSG_NOSIGNAL)) == request.count else { throw HarnessError("send failed") }

        var outcome = Outcome(status: nil, contentLength: nil, bodyBytes: 0, endedAt: nil, reset: false)
        var head: [UInt8] = []
        var headDone = false
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        let deadline = Date().addingTimeInterval(limit)
        let slowChunk = max(1, bytesPerSecond / 20)
        while Date() < deadline {
            let fast = Date() >= fastAfter
            var watch = pollfd(fd: fd, events: Int16(POLLIN) | pollReadHangUp, revents: 0)
            let ready = poll(&watch, 1, 50)
            if ready > 0, outcome.endedAt == nil, watch.revents & (pollReadHangUp | Int16(POLLHUP) | Int16(POLLERR)) != 0 {
                outcome.endedAt = Date()
            }
            guard ready > 0, watch.revents & Int16(POLLIN) != 0 || watch.revents & (Int16(POLLHUP) | Int16(POLLERR)) != 0 else { continue }
            let want = fast || !headDone ? buffer.count : slowChunk
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, want, 0) }
            if n == 0 { break }
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                outcome.reset = errno == ECONNRESET
                if outcome.endedAt == nil { outcome.endedAt = Date() }
                break
            }
            if headDone {
                outcome.bodyBytes += n
            } else {
                head += buffer[0..<n]
                if let end = Self.headEnd(head) {
                    headDone = true
                    let text = String(decoding: head[0..<end], as: UTF8.self)
                    outcome.status = text.split(separator: " ").dropFirst().first.flatMap { Int($0) }
                    for line in text.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
                        outcome.contentLength = Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces))
                    }
                    outcome.bodyBytes = head.count - end - 4
                }
            }
            if !fast, headDone { usleep(50_000) }
        }
        return outcome
    }

    /// `POLLRDHUP` (Linux): the peer ended its side; not exported to Swift by Glibc.
    private static let pollReadHangUp: Int16 = 0x2000

    private static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i
        }
        return nil
    }
}
