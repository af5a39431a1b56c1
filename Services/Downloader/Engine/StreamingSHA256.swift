import Crypto
import Foundation
import Glibc
import HTTPClient

/// SHA-256 of a download computed while its bytes arrive (a `DownloadBodyObserver`), so
/// verification never reads a finished file back. It also watches the declared size: a body
/// that runs past it is flagged at once and the transfer stopped, before the disk fills.
final class StreamingSHA256: DownloadBodyObserver, @unchecked Sendable {
    fileprivate struct State {
        var hasher = SHA256()
        var position: Int64 = 0
        var overflowed = false
    }

    /// Guarded by `lock`: written on the transfer thread, read by the engine.
    private var stateStorage = State()
    private let lock = NSLock()
    let path: String
    let declaredSize: Int64

    init(path: String, declaredSize: Int64) {
        self.path = path
        self.declaredSize = declaredSize
    }

    /// Bytes hashed so far (equals the file's length while the observer follows it).
    var position: Int64 { withState { $0.position } }
    /// True once more bytes arrived than the manifest declared.
    var overflowed: Bool { withState { $0.overflowed } }

    /// Hashes the first `length` bytes already in the file (a resume after a restart).
    func absorbExisting(length: Int64) throws {
        let fresh = try Self.hashPrefix(path: path, length: length)
        withState { $0 = State(hasher: fresh, position: length) }
    }

    func bodyBegins(atOffset offset: Int64) {
        let current = withState { $0.position }
        guard offset != current else { return }
        // A 200 (Range ignored) restarts at 0; anything else re-reads the kept prefix.
        let fresh = offset == 0 ? SHA256() : ((try? Self.hashPrefix(path: path, length: offset)) ?? SHA256())
        withState { $0 = State(hasher: fresh, position: offset) }
    }

    func bodyWritten(_ bytes: UnsafeRawBufferPointer) {
        withState { s in
            s.hasher.update(bufferPointer: bytes)
            s.position += Int64(bytes.count)
            if s.position > declaredSize { s.overflowed = true }
        }
    }

    /// Lowercase hex digest of everything hashed (consumes a copy; the observer stays usable).
    func hexDigest() -> String {
        let digest = withState { $0.hasher }.finalize()
        return digest.map { String(format: "%02x", $0) }.joined()
    }

    private static func hashPrefix(path: String, length: Int64) throws -> SHA256 {
        var hasher = SHA256()
        guard length > 0 else { return hasher }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw DownloaderError.storage("cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var left = length
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while left > 0 {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, min($0.count, Int(left))) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw DownloaderError.storage("\(path) is shorter than \(length) bytes") }
            buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            left -= Int64(n)
        }
        return hasher
    }
}

extension StreamingSHA256 {
    fileprivate func withState<T>(_ body: (inout State) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&stateStorage)
    }
}
