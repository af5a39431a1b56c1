import Wire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A blocking Unix-socket client with bounded reads and writes (SO_RCVTIMEO/SO_SNDTIMEO),
/// and one read buffer shared by the line reader (MPD) and the frame reader (Cassette).
/// The same code measures both peers, so neither pays for a heavier client.
final class RawUnixSocket {
    let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    private var start = 0
    private var end = 0

    /// One connect attempt; the failure carries `errno` so callers can retry "not there yet".
    init(path: String, timeoutSeconds: Double) throws(ConnectFailure) {
        #if canImport(Glibc)
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
            let fd = socket(AF_UNIX, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw ConnectFailure(code: errno, path: path) }
        var tv = timeval(tv_sec: Int(timeoutSeconds), tv_usec: .init((timeoutSeconds - timeoutSeconds.rounded(.down)) * 1e6))
        let size = socklen_t(MemoryLayout<timeval>.size)
        // On Linux SO_SNDTIMEO also bounds a blocking connect on a full backlog.
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, size)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, size)
        guard let rc = UnixSocketAddress.withSockaddr(path, { systemConnect(fd, $0, $1) }) else {
            close(fd)
            throw ConnectFailure(code: ENAMETOOLONG, path: path)
        }
        if rc != 0 {
            let code = errno
            close(fd)
            throw ConnectFailure(code: code, path: path)
        }
        self.fd = fd
    }

    /// Retries `connect` while the server is not there yet (ENOENT, ECONNREFUSED), up to `until`.
    static func connect(path: String, timeoutSeconds: Double, until: UInt64) throws -> RawUnixSocket {
        var attempts = 0
        while true {
            attempts += 1
            do {
                return try RawUnixSocket(path: path, timeoutSeconds: timeoutSeconds)
            } catch {
                let retryable = error.code == ENOENT || error.code == ECONNREFUSED || error.code == EAGAIN
                guard retryable, monotonicNanos() < until else {
                    throw BenchError.system("connect to \(path) (after \(attempts) attempts)", error.code)
                }
                sleepMicros(100)
            }
        }
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { raw in
            var sent = 0
            while sent < raw.count {
                #if canImport(Glibc)
                    let n = Glibc.send(fd, raw.baseAddress! + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
                #else
                    let n = Darwin.send(fd, raw.baseAddress! + sent, raw.count - sent, 0)
                #endif
                if n < 0 {
                    if errno == EINTR { continue }
                    throw BenchError.system(errno == EAGAIN ? "send timed out" : "send")
                }
                sent += n
            }
        }
    }

    /// Reads at least one more byte into the buffer.
    private func fill() throws {
        if start == end {
            start = 0
            end = 0
        }
        if end == buffer.count {
            if start > 0 {
                buffer.withUnsafeMutableBufferPointer { p in
                    _ = memmove(p.baseAddress!, p.baseAddress! + start, end - start)
                }
                end -= start
                start = 0
            } else {
                buffer.append(contentsOf: repeatElement(0, count: buffer.count))
            }
        }
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + end, $0.count - end, 0) }
            if n > 0 {
                end += n
                return
            }
            if n == 0 { throw BenchError("the server closed the connection") }
            if errno == EINTR { continue }
            throw BenchError.system(errno == EAGAIN ? "no answer within the I/O timeout" : "recv")
        }
    }

    /// Calls `body` with the next `count` bytes and consumes them.
    func withBytes<T>(_ count: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> T) throws -> T {
        // `fill` compacts, then doubles the buffer, so any frame size fits.
        while end - start < count { try fill() }
        defer { start += count }
        return try buffer.withUnsafeBufferPointer { try body(UnsafeBufferPointer(rebasing: $0[start..<start + count])) }
    }

    /// Sends `json` as one Cassette frame (a 4-byte big-endian length, then the bytes) and calls
    /// `body` with the payload of the next frame received.
    func exchangeFrame<T>(_ json: [UInt8], _ body: (UnsafeBufferPointer<UInt8>) throws -> T) throws -> T {
        let n = UInt32(json.count)
        try send([UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)] + json)
        let length = try withBytes(4) { b in Int(b[0]) << 24 | Int(b[1]) << 16 | Int(b[2]) << 8 | Int(b[3]) }
        guard length > 0, length <= 16 << 20 else { throw BenchError("bad frame length \(length)") }
        return try withBytes(length, body)
    }

    /// Sends a JSON-RPC request and returns its `result`; an error answer throws.
    func call(id: Int, _ method: String, params: String) throws -> JSONValue {
        let json = Array(#"{"jsonrpc":"2.0","id":\#(id),"method":"\#(method)","params":\#(params)}"#.utf8)
        let body = try exchangeFrame(json) { Array($0) }
        guard let result = (try? JSONValue.parse(body))?["result"] else {
            throw BenchError("\(method) failed: \(String(decoding: body, as: UTF8.self))")
        }
        return result
    }

    /// Calls `body` with the next line (without its "\n") and consumes it.
    func withLine<T>(_ body: (UnsafeBufferPointer<UInt8>) throws -> T) throws -> T {
        var checked = 0 // bytes after `start` known to hold no newline; `fill` keeps them in order
        for _ in 0..<1_000_000 {
            if let newline = buffer[(start + checked)..<end].firstIndex(of: UInt8(ascii: "\n")) {
                let lineStart = start
                start = newline + 1
                return try buffer.withUnsafeBufferPointer { try body(UnsafeBufferPointer(rebasing: $0[lineStart..<newline])) }
            }
            checked = end - start
            try fill()
        }
        throw BenchError("no end of line after 1 000 000 reads")
    }
}

/// `connect(2)`, named apart from `RawUnixSocket.connect`.
private func systemConnect(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
    connect(fd, address, length)
}

/// A failed connect attempt, kept apart so the caller can tell "not there yet" from real errors.
struct ConnectFailure: Error {
    var code: Int32
    var path: String
}

extension UnsafeBufferPointer<UInt8> {
    func hasPrefix(_ ascii: StaticString) -> Bool {
        let n = ascii.utf8CodeUnitCount
        guard count >= n else { return false }
        return memcmp(baseAddress!, ascii.utf8Start, n) == 0
    }

    func contains(_ ascii: StaticString) -> Bool {
        let n = ascii.utf8CodeUnitCount
        guard count >= n, n > 0 else { return n == 0 }
        let needle = ascii.utf8Start
        for i in 0...(count - n) where self[i] == needle[0] && memcmp(baseAddress! + i, needle, n) == 0 {
            return true
        }
        return false
    }

    var string: String { String(decoding: self, as: UTF8.self) }
}
