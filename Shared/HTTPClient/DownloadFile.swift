#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The file a download writes into. Owns its descriptor from `open` until `close()`.
/// Used only on the one pool thread that runs the transfer.
final class DownloadFile {
    private var fd: Int32
    /// The file's length before the first write of this transfer.
    let startOffset: Int64
    private(set) var bytesWritten: Int64 = 0
    /// See `HTTPClient.Configuration.downloadWritebackBytes`; 0 = off.
    var writebackBytes: Int64 = 0
    /// File offset up to which writeback was started.
    private var writebackStarted: Int64 = -1

    /// Opens `path` for a 200 response: created or truncated to empty.
    static func truncating(_ path: String) throws(HTTPClientError) -> DownloadFile {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o640)
        guard fd >= 0 else { throw fileError("open \(path)") }
        return DownloadFile(fd: fd, startOffset: 0)
    }

    /// Opens `path` for a 206 response whose body starts at `offset`: the file must already hold
    /// at least `offset` bytes; anything after `offset` is cut off, new bytes follow it.
    static func resuming(_ path: String, at offset: Int64) throws(HTTPClientError) -> DownloadFile {
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o640)
        guard fd >= 0 else { throw fileError("open \(path)") }
        var info = stat()
        guard fstat(fd, &info) == 0 else { let e = fileError("fstat \(path)"); Glibc.close(fd); throw e }
        guard Int64(info.st_size) >= offset else {
            Glibc.close(fd)
            throw HTTPClientError(code: .fileError,
                                  message: "\(path) holds \(info.st_size) bytes, cannot resume from \(offset)")
        }
        guard ftruncate(fd, off_t(offset)) == 0, lseek(fd, off_t(offset), SEEK_SET) == off_t(offset) else {
            let e = fileError("seek \(path)")
            Glibc.close(fd)
            throw e
        }
        return DownloadFile(fd: fd, startOffset: offset)
    }

    private init(fd: Int32, startOffset: Int64) {
        self.fd = fd
        self.startOffset = startOffset
    }

    var fileSize: Int64 { startOffset + bytesWritten }

    /// The open descriptor (valid until `close()`), for a body observer's fsync.
    var descriptor: Int32 { fd }

    /// Writes all of `bytes`, retrying short writes and EINTR.
    func write(_ bytes: UnsafeRawBufferPointer) throws(HTTPClientError) {
        guard var next = bytes.baseAddress else { return }
        var left = bytes.count
        while left > 0 {
            let n = Glibc.write(fd, next, left)
            if n < 0 {
                if errno == EINTR { continue }
                throw DownloadFile.fileError("write")
            }
            left -= n
            next += n
            bytesWritten += Int64(n)
        }
        startWritebackIfDue()
    }

    /// Starts (does not wait for) writeback of what was written since the last call, once at
    /// least `writebackBytes` accumulated. Failures are ignored: it is only a hint.
    private func startWritebackIfDue() {
        guard writebackBytes > 0 else { return }
        if writebackStarted < 0 { writebackStarted = startOffset }
        let end = fileSize
        guard end - writebackStarted >= writebackBytes else { return }
        _ = cassetteSyncFileRange(fd, writebackStarted, end - writebackStarted, syncFileRangeWrite)
        writebackStarted = end
    }

    /// The body is complete: starts writeback of what no earlier call started (a small file's
    /// whole body), while the descriptor is still open, so a caller's fsync finds the writes
    /// under way without opening the file again. Only a hint, like `startWritebackIfDue`.
    func startFinalWriteback() {
        guard writebackBytes > 0, fd >= 0 else { return }
        let from = max(writebackStarted, startOffset)
        guard fileSize > from else { return }
        _ = cassetteSyncFileRange(fd, from, fileSize - from, syncFileRangeWrite)
        writebackStarted = fileSize
    }

    /// Closes the descriptor now rather than at deinit.
    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    deinit { close() }

    private static func fileError(_ what: String) -> HTTPClientError {
        HTTPClientError(code: .fileError, message: "\(what): \(String(cString: strerror(errno)))")
    }
}

/// `SYNC_FILE_RANGE_WRITE`: start writeback of the range's dirty pages, do not wait.
private let syncFileRangeWrite: UInt32 = 2

/// glibc's `sync_file_range(2)` (Linux), which the Glibc module does not export.
@_silgen_name("sync_file_range")
private func cassetteSyncFileRange(_ fd: Int32, _ offset: Int64, _ count: Int64, _ flags: UInt32) -> Int32
