import BlockingIO
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Writes a large download's body to its file with `O_DIRECT`, on a thread of its own.
///
/// The transfer thread copies what curl receives into one of a few aligned chunks and hands a
/// full chunk over; this thread writes it straight to the disk, bypassing the page cache. The
/// bytes then cost one copy instead of two (into the page cache, then the kernel's writeback of
/// it), the disk works while the network does, and the caller's final fsync finds only the
/// file's metadata left. The transfer thread waits only when every chunk is full and queued,
/// so memory stays bounded at `chunkCount × chunkBytes` whatever the link's speed.
///
/// Owns its descriptor (opened with `O_DIRECT`) and its chunks; `finish` must be called once,
/// from the transfer thread, before the writer is dropped.
final class DirectWriter: @unchecked Sendable {
    /// Offsets, lengths and addresses of direct writes are multiples of this (the largest
    /// logical block size of common disks).
    static let alignment = 4096
    static let chunkBytes = 2 << 20
    static let chunkCount = 4

    private let fd: Int32
    private let condition = NSCondition()
    /// Guarded by `condition`.
    private var free: [UnsafeMutableRawPointer] = []
    /// The first failed write's message (errno text included); later chunks are dropped.
    private var failure: String?
    private let all: [UnsafeMutableRawPointer]
    /// The writing thread, fed full chunks in file order.
    private var worker: OrderedWorker<(chunk: UnsafeMutableRawPointer, count: Int, offset: Int64)>!

    /// Opens `path` a second time with `O_DIRECT`; nil when the file system refuses it (then the
    /// caller keeps writing through the page cache).
    init?(path: String) {
        let fd = open(path, O_WRONLY | oDirect | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        var chunks: [UnsafeMutableRawPointer] = []
        for _ in 0..<Self.chunkCount {
            var memory: UnsafeMutableRawPointer?
            guard posix_memalign(&memory, Self.alignment, Self.chunkBytes) == 0, let memory else {
                chunks.forEach { Glibc.free($0) }
                Glibc.close(fd)
                return nil
            }
            chunks.append(memory)
        }
        self.fd = fd
        all = chunks
        free = chunks
        // Weak: the worker's thread must not keep the writer (and its chunks) alive.
        worker = OrderedWorker(name: "cassette-direct") { [weak self] next in self?.write(next) }
    }

    deinit {
        all.forEach { Glibc.free($0) }
    }

    /// A chunk to fill, waiting while every chunk is queued. Nil once a write failed.
    func takeChunk() -> UnsafeMutableRawPointer? {
        condition.lock()
        defer { condition.unlock() }
        while free.isEmpty && failure == nil { condition.wait() }
        guard failure == nil else { return nil }
        return free.removeLast()
    }

    /// Queues `count` bytes of `chunk` (a multiple of `alignment`) for the file at `offset`.
    func submit(_ chunk: UnsafeMutableRawPointer, count: Int, offset: Int64) {
        worker.submit((chunk, count, offset))
    }

    /// Gives back a chunk that was taken but not submitted.
    func giveBack(_ chunk: UnsafeMutableRawPointer) {
        condition.lock()
        free.append(chunk)
        condition.broadcast()
        condition.unlock()
    }

    /// The first write failure so far, if any.
    var failed: String? {
        condition.lock()
        defer { condition.unlock() }
        return failure
    }

    /// Waits until every queued chunk is written (or dropped after a failure), stops the thread
    /// and closes the descriptor. Returns the failure, if any. Call once; the chunks not taken
    /// back are freed with the writer.
    func finish() -> String? {
        worker.finish()
        Glibc.close(fd)
        return failed
    }

    /// On the worker's thread: writes one queued chunk (none after a failure) and frees it.
    private func write(_ next: (chunk: UnsafeMutableRawPointer, count: Int, offset: Int64)) {
        let error = failed == nil ? write(next.chunk, count: next.count, offset: next.offset) : nil
        condition.lock()
        if let error, failure == nil { failure = error }
        free.append(next.chunk)
        condition.broadcast()
        condition.unlock()
    }

    /// One chunk, all of it; nil when written. A short write (a full disk) is retried from where
    /// it stopped, so the error reported is the kernel's own.
    private func write(_ chunk: UnsafeMutableRawPointer, count: Int, offset: Int64) -> String? {
        var done = 0
        while done < count {
            let n = pwrite(fd, chunk + done, count - done, off_t(offset + Int64(done)))
            if n < 0 {
                if errno == EINTR { continue }
                return "write: \(String(cString: strerror(errno)))"
            }
            guard n > 0 else { return "write: \(String(cString: strerror(EIO)))" }
            done += n
            if done < count && done % Self.alignment != 0 {
                // The rest no longer starts on a block boundary: O_DIRECT cannot continue it.
                return "write: \(String(cString: strerror(ENOSPC)))"
            }
        }
        return nil
    }
}

/// `O_DIRECT`, which Glibc's module leaves out (it is behind `_GNU_SOURCE`); its value differs
/// between architectures (asm-generic/fcntl.h and the arm overrides).
#if arch(arm64) || arch(arm)
    let oDirect: Int32 = 0o200000
#else
    let oDirect: Int32 = 0o40000
#endif
