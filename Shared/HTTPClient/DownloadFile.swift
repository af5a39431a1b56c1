#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The file a download writes into. Owns its descriptor from `open` until `close()`.
/// Used only on the one pool thread that runs the transfer.
///
/// A large body may go to the disk directly (`useDirectWrites`, see `DirectWriter`): its bytes
/// are then gathered into aligned chunks written on the writer's thread, and the last partial
/// chunk through the page cache when the body ends. `finishWrites` (or `close`) puts every byte
/// received into the file before the caller looks at it.
final class DownloadFile {
    private var fd: Int32
    /// The file's length before the first write of this transfer.
    let startOffset: Int64
    private(set) var bytesWritten: Int64 = 0
    /// See `HTTPClient.Configuration.downloadWritebackBytes`; 0 = off.
    var writebackBytes: Int64 = 0
    /// File offset up to which writeback was started.
    private var writebackStarted: Int64 = -1
    private let path: String
    /// Set while the body goes to the disk directly.
    private var direct: DirectWriter?
    /// The chunk being filled, and how many bytes it holds; they belong at `chunkOffset`.
    private var chunk: UnsafeMutableRawPointer?
    private var chunkFill = 0
    private var chunkOffset: Int64 = 0

    /// Opens `path` for a 200 response: created or truncated to empty.
    static func truncating(_ path: String) throws(HTTPClientError) -> DownloadFile {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o640)
        guard fd >= 0 else { throw fileError("open \(path)") }
        return DownloadFile(fd: fd, startOffset: 0, path: path)
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
        return DownloadFile(fd: fd, startOffset: offset, path: path)
    }

    private init(fd: Int32, startOffset: Int64, path: String) {
        self.fd = fd
        self.startOffset = startOffset
        self.path = path
    }

    /// Sends the body straight to the disk when `expectedBytes` (what the body will still
    /// bring) reaches `threshold` and the body starts on a block boundary; otherwise, or when
    /// the file system refuses `O_DIRECT`, nothing changes.
    func useDirectWrites(expectedBytes: Int64?, threshold: Int64) {
        guard threshold > 0, let expectedBytes, expectedBytes >= threshold, direct == nil, bytesWritten == 0,
              startOffset % Int64(DirectWriter.alignment) == 0,
              let writer = DirectWriter(path: path, writtenEnd: startOffset) else { return }
        direct = writer
        chunkOffset = startOffset
        // What goes through the page cache now is only the last partial chunk.
        writebackStarted = Int64.max
    }

    var fileSize: Int64 { startOffset + bytesWritten }

    /// The open descriptor (valid until `close()`), for a body observer's fsync.
    var descriptor: Int32 { fd }

    /// Writes all of `bytes`, retrying short writes and EINTR.
    func write(_ bytes: UnsafeRawBufferPointer) throws(HTTPClientError) {
        if let direct { return try stage(bytes, direct) }
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

    /// Copies `bytes` into the chunk being filled, handing each full chunk to the writer.
    private func stage(_ bytes: UnsafeRawBufferPointer, _ direct: DirectWriter) throws(HTTPClientError) {
        guard var next = bytes.baseAddress else { return }
        var left = bytes.count
        while left > 0 {
            if chunk == nil {
                guard let fresh = direct.takeChunk() else { throw writerFailure(direct.failed) }
                chunk = fresh
            }
            let n = min(left, DirectWriter.chunkBytes - chunkFill)
            (chunk! + chunkFill).copyMemory(from: next, byteCount: n)
            chunkFill += n
            next += n
            left -= n
            bytesWritten += Int64(n)
            if chunkFill == DirectWriter.chunkBytes {
                direct.submit(chunk!, count: chunkFill, offset: chunkOffset)
                chunkOffset += Int64(chunkFill)
                chunk = nil
                chunkFill = 0
            }
        }
    }

    /// Puts every byte received into the file: waits for the writer, then writes the last
    /// partial chunk through the page cache. After a failure the file holds what was written
    /// before it, and `bytesWritten` says so. Does nothing for a file written without the writer.
    func finishWrites() throws(HTTPClientError) {
        guard let direct else { return }
        self.direct = nil
        let (writtenEnd, failure) = direct.finish()
        var error: HTTPClientError?
        if failure == nil, let chunk, chunkFill > 0 {
            var done = 0
            while done < chunkFill {
                let n = pwrite(fd, chunk + done, chunkFill - done, off_t(chunkOffset + Int64(done)))
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { error = DownloadFile.fileError("write"); break }
                done += n
            }
        }
        if let chunk { direct.giveBack(chunk) }
        chunk = nil
        chunkFill = 0
        if let failure { error = writerFailure(failure) }
        if error != nil {
            var info = stat()
            let onDisk = fstat(fd, &info) == 0 ? Int64(info.st_size) : writtenEnd
            bytesWritten = max(0, onDisk - startOffset)
        }
        writebackStarted = max(startOffset, chunkOffset)
        if let error { throw error }
    }

    private func writerFailure(_ message: String?) -> HTTPClientError {
        HTTPClientError(code: .fileError, message: message ?? "write: the direct writer stopped")
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

    /// Closes the descriptor now rather than at deinit (after putting every byte received
    /// into the file; a failure to do so shows in `bytesWritten`).
    func close() {
        if direct != nil { _ = try? finishWrites() }
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
