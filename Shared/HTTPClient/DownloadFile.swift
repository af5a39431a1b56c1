#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The file a download writes into. Owns its descriptor from `open` until `close()`.
/// Used only on the one pool thread that runs the transfer.
///
/// A body may skip the page cache (`stageForDisk`): a large one is gathered into aligned
/// chunks that a `DirectWriter` thread writes with `O_DIRECT` while the next fills, a small one
/// is held whole and written directly when it ends; either way the last partial block goes
/// through the page cache. A link too slow to fill the first chunk (or the small body) soon
/// drops back to plain writes, so a reader of the growing file never waits long for bytes that
/// arrived. `finishWrites` (or `close`) puts every byte received into the file before the
/// caller looks at it.
final class DownloadFile {
    private var fd: Int32
    /// The file's length before the first write of this transfer.
    let startOffset: Int64
    /// Bytes received into the file (some may still be staged until `finishWrites`).
    private(set) var bytesWritten: Int64 = 0
    /// See `HTTPClient.Configuration.downloadWritebackBytes`; 0 = off.
    var writebackBytes: Int64 = 0
    /// File offset up to which writeback was started.
    private var writebackStarted: Int64 = -1
    private let path: String

    /// Where received bytes wait before the file.
    private enum Staging {
        /// Nowhere: each write goes to the file through the page cache.
        case none
        /// A small body, held whole in `chunk` (up to `capacity` bytes: the expected length
        /// rounded up to a block) until it ends; `allocated` is the memory's size (`AlignedBuffers`).
        case whole(capacity: Int, allocated: Int)
        /// A large body, in chunks handed to the writer thread.
        case chunks(DirectWriter)
    }
    private var staging = Staging.none
    /// The memory being filled and how many bytes it holds; they belong at `chunkOffset`.
    private var chunk: UnsafeMutableRawPointer?
    private var chunkFill = 0
    private var chunkOffset: Int64 = 0
    /// A chunk was handed to the writer: the body stays staged to its end.
    private var handedOver = false
    /// Monotonic time by which the first chunk (or the small body) must be full, else the link
    /// is slow and the bytes go to the file as they come.
    private var stagingDeadline: UInt64 = 0
    /// How long the first chunk (or a small body) may take to fill.
    static let stagingPatienceNanos: UInt64 = 250_000_000
    /// Small bodies up to this size are held whole; between it and the large-body threshold
    /// bodies are written through the page cache.
    static let wholeBodyMaxBytes = 1 << 20

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
        guard fstat(fd, &info) == 0 else {
            let e = fileError("fstat \(path)")
            Glibc.close(fd)
            throw e
        }
        guard Int64(info.st_size) >= offset else {
            Glibc.close(fd)
            throw HTTPClientError(
                code: .fileError,
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

    /// Lets the body skip the page cache when it starts on a block boundary and its expected
    /// length (what it will still bring) is at least `largeThreshold` (chunks on a writer
    /// thread) or at most `wholeBodyMaxBytes` (held whole); otherwise, when `largeThreshold`
    /// is 0, or when the file system refuses `O_DIRECT`, nothing changes.
    func stageForDisk(expectedBytes: Int64?, largeThreshold: Int64) {
        guard largeThreshold > 0, let expectedBytes, expectedBytes > 0, case .none = staging, bytesWritten == 0,
            startOffset % Int64(DirectWriter.alignment) == 0
        else { return }
        if expectedBytes >= largeThreshold {
            guard let writer = DirectWriter(path: path) else { return }
            staging = .chunks(writer)
        } else if expectedBytes <= Int64(Self.wholeBodyMaxBytes) {
            // Reused memory (`AlignedBuffers`): fresh memory cost a page fault per 4 KiB copied in.
            let capacity = (Int(expectedBytes) + DirectWriter.alignment - 1) / DirectWriter.alignment * DirectWriter.alignment
            guard let (memory, allocated) = AlignedBuffers.take(atLeast: capacity) else { return }
            chunk = memory
            staging = .whole(capacity: capacity, allocated: allocated)
        } else {
            return
        }
        chunkOffset = startOffset
        stagingDeadline = monotonicNanos() + Self.stagingPatienceNanos
        // What goes through the page cache now is only the last partial block.
        writebackStarted = Int64.max
    }

    var fileSize: Int64 { startOffset + bytesWritten }

    /// The open descriptor (valid until `close()`), for a body observer's fsync.
    var descriptor: Int32 { fd }

    /// Writes all of `bytes`, retrying short writes and EINTR.
    func write(_ bytes: UnsafeRawBufferPointer) throws(HTTPClientError) {
        switch staging {
        case .none:
            break
        case .whole(let capacity, _):
            if chunkFill + bytes.count <= capacity, monotonicNanos() <= stagingDeadline {
                copyIntoChunk(bytes)
                return
            }
            try leaveStaging()
        case .chunks(let writer):
            if handedOver || monotonicNanos() <= stagingDeadline { return try stage(bytes, writer) }
            try leaveStaging()
        }
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

    private func copyIntoChunk(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, let chunk else { return }
        (chunk + chunkFill).copyMemory(from: base, byteCount: bytes.count)
        chunkFill += bytes.count
        bytesWritten += Int64(bytes.count)
    }

    /// Copies `bytes` into the chunk being filled, handing each full chunk to the writer.
    private func stage(_ bytes: UnsafeRawBufferPointer, _ writer: DirectWriter) throws(HTTPClientError) {
        guard var next = bytes.baseAddress else { return }
        var left = bytes.count
        while left > 0 {
            if chunk == nil {
                guard let fresh = writer.takeChunk() else { throw writerFailure(writer.failed) }
                chunk = fresh
            }
            let n = min(left, DirectWriter.chunkBytes - chunkFill)
            (chunk! + chunkFill).copyMemory(from: next, byteCount: n)
            chunkFill += n
            next += n
            left -= n
            bytesWritten += Int64(n)
            if chunkFill == DirectWriter.chunkBytes {
                writer.submit(chunk!, count: chunkFill, offset: chunkOffset)
                handedOver = true
                chunkOffset += Int64(chunkFill)
                chunk = nil
                chunkFill = 0
            }
        }
    }

    /// The link is slow (or the body longer than announced) before anything was handed to the
    /// disk: the staged bytes go to the file now, and the rest as it comes.
    private func leaveStaging() throws(HTTPClientError) {
        var writer: DirectWriter?
        var wholeCapacity = 0
        switch staging {
        case .none:
            return
        case .whole(_, let allocated):
            wholeCapacity = allocated
            staging = .none
        case .chunks(let chunks):
            staging = .none
            _ = chunks.finish()
            writer = chunks
        }
        let staged = chunk
        let count = chunkFill
        chunk = nil
        chunkFill = 0
        // A writer's chunk goes back to it (it frees its chunks); a small body's to the pool.
        defer {
            if let staged {
                if let writer { writer.giveBack(staged) } else { AlignedBuffers.giveBack(staged, capacity: wholeCapacity) }
            }
        }
        writebackStarted = -1
        if let staged, count > 0 { try writeFully(staged, count: count, at: chunkOffset) }
        guard lseek(fd, off_t(fileSize), SEEK_SET) == off_t(fileSize) else { throw DownloadFile.fileError("seek") }
    }

    /// Puts every byte received into the file: waits for the writer (a large body) or writes
    /// the body held whole with `O_DIRECT` (a small one), then the last partial block through
    /// the page cache. After a failure the file holds what was written before it, and
    /// `bytesWritten` says so. Does nothing for a body written as it came.
    func finishWrites() throws(HTTPClientError) {
        var error: HTTPClientError?
        var directEnd = chunkOffset
        switch staging {
        case .none:
            return
        case .whole(_, let allocated):
            staging = .none
            let aligned = chunkFill / DirectWriter.alignment * DirectWriter.alignment
            if let chunk, aligned > 0 {
                if writeDirect(chunk, count: aligned, at: chunkOffset) {
                    directEnd = chunkOffset + Int64(aligned)
                    let tail = chunkFill - aligned
                    if tail > 0 {
                        do { try writeFully(chunk + aligned, count: tail, at: directEnd) } catch let e { error = e }
                    }
                } else {
                    do { try writeFully(chunk, count: chunkFill, at: chunkOffset) } catch let e { error = e }
                }
            } else if let chunk, chunkFill > 0 {
                do { try writeFully(chunk, count: chunkFill, at: chunkOffset) } catch let e { error = e }
            }
            chunk.map { AlignedBuffers.giveBack($0, capacity: allocated) }
        case .chunks(let writer):
            staging = .none
            let failure = writer.finish()
            if let failure {
                error = writerFailure(failure)
            } else if let chunk, chunkFill > 0 {
                do { try writeFully(chunk, count: chunkFill, at: chunkOffset) } catch let e { error = e }
            }
            chunk.map(writer.giveBack)
        }
        chunk = nil
        chunkFill = 0
        if error != nil {
            var info = stat()
            let onDisk = fstat(fd, &info) == 0 ? Int64(info.st_size) : startOffset
            bytesWritten = max(0, onDisk - startOffset)
        }
        writebackStarted = max(startOffset, directEnd)
        if let error { throw error }
    }

    /// `count` bytes at `offset` through the page cache, all of them.
    private func writeFully(_ memory: UnsafeMutableRawPointer, count: Int, at offset: Int64) throws(HTTPClientError) {
        var done = 0
        while done < count {
            let n = pwrite(fd, memory + done, count - done, off_t(offset + Int64(done)))
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw DownloadFile.fileError("write") }
            done += n
        }
    }

    /// `count` aligned bytes at `offset` with `O_DIRECT` switched on for the descriptor, then
    /// off again. False when nothing was written that way (the caller writes them as usual).
    private func writeDirect(_ memory: UnsafeMutableRawPointer, count: Int, at offset: Int64) -> Bool {
        let flags = fcntl(fd, F_GETFL)
        guard flags >= 0, fcntl(fd, F_SETFL, flags | oDirect) == 0 else { return false }
        defer { _ = fcntl(fd, F_SETFL, flags) }
        var done = 0
        while done < count {
            let n = pwrite(fd, memory + done, count - done, off_t(offset + Int64(done)))
            if n < 0 && errno == EINTR { continue }
            // Refused (EINVAL on a file system without O_DIRECT) or short: the plain write redoes it all.
            guard n > 0, done + n == count || (done + n) % DirectWriter.alignment == 0 else { return false }
            done += n
        }
        return true
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
        _ = try? finishWrites()
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

/// CLOCK_MONOTONIC in nanoseconds.
private func monotonicNanos() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}
