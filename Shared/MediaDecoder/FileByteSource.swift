import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A complete local file as a `ByteSource`: what the player reads an offlined, verified file
/// through, so every kind of source takes the same decoder path.
///
/// Thread-safety: `read`/`seek` come from the one decode thread; `close()` may come from any
/// thread. The descriptor and position are guarded by a lock, and a closed source throws.
public final class FileByteSource: ByteSource, @unchecked Sendable {
    public let path: String
    public let size: Int64?
    private let lock = NSLock()
    private var fd: Int32
    private var position: Int64 = 0

    /// Opens `path` for reading. Throws `ByteSourceError` (`FileNotFound`, `ReadFailed`).
    public init(path: String) throws {
        self.path = path
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ByteSourceError.io("open(\(path))", errno: errno) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let code = errno
            Glibc.close(fd)
            throw ByteSourceError.io("fstat(\(path))", errno: code)
        }
        self.fd = fd
        size = Int64(info.st_size)
    }

    deinit { close() }

    public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try lock.withLock {
            guard fd >= 0 else { throw ByteSourceError.closed(path) }
            while true {
                let count = pread(fd, buffer.baseAddress, buffer.count, off_t(position))
                if count >= 0 {
                    position += Int64(count)
                    return count
                }
                if errno != EINTR { throw ByteSourceError.io("read(\(path))", errno: errno) }
            }
        }
    }

    public func seek(to offset: Int64) throws {
        try lock.withLock {
            guard fd >= 0 else { throw ByteSourceError.closed(path) }
            guard offset >= 0 else { throw ByteSourceError(name: "InvalidSeek", message: "offset \(offset) in \(path)") }
            position = offset
        }
    }

    public func close() {
        lock.withLock {
            if fd >= 0 { Glibc.close(fd) }
            fd = -1
        }
    }
}
