import Foundation
import MediaDecoder

#if canImport(Glibc)
    import Glibc
#endif

/// A file the downloader is still writing (`<localPath>.part`, docs/catalog.md), read while it
/// grows: TIDAL's STALLED state and Brightcove's "playback during download".
///
/// At the written end a read waits, polling the file's size and the download's state every
/// `pollInterval`: `.stalled` once the wait outlasts `stallGrace`, `.resumed` when bytes arrive.
/// The end of the file is the end only once the download is verified; a download that failed
/// emits `.failed` and throws its error. The open descriptor follows the inode across the
/// downloader's `.part` → final rename; if the downloader starts the file over (a new inode), the
/// reader switches to it at the same offset.
///
/// Threading: `read`/`seek` come from the one decode thread, which alone touches the descriptor;
/// `close()` may come from any thread and is seen by a waiting read within one poll.
final class GrowingFileSource: ByteSource, @unchecked Sendable {
    /// What the catalog says about the download, asked each time the reader is at the written end.
    enum Progress: Sendable, Equatable {
        /// Still being written, or queued to be.
        case downloading
        /// Verified and renamed: the bytes on disk are all there is.
        case complete
        case failed(SourceError)
    }

    let partPath: String
    let finalPath: String
    let size: Int64?
    private let pollInterval: Double
    private let progress: @Sendable () -> Progress
    private let events: @Sendable (ByteSourceEvent) -> Void

    // Reader-thread state.
    private var fd: Int32 = -1
    private var inode: ino_t = 0
    private var position: Int64 = 0
    private var stall: StallTracker
    private var failure: SourceError?

    private let closedLock = NSLock()
    private var closedFlag = false
    private var isClosed: Bool { closedLock.withLock { closedFlag } }

    /// - Parameters:
    ///   - path: the final absolute path (`<media>/<localPath>`); `.part` is appended while downloading.
    ///   - declaredSize: `files.sizeBytes`, the size once complete (for AVSEEK_SIZE).
    ///   - progress: the download's state, read from the catalog by the resolver.
    init(
        path: String, declaredSize: Int64?, pollInterval: Double = 0.05, stallGrace: Double = 0.1,
        progress: @escaping @Sendable () -> Progress, events: @escaping @Sendable (ByteSourceEvent) -> Void
    ) {
        finalPath = path
        partPath = path + ".part"
        size = declaredSize
        self.pollInterval = max(0.005, pollInterval)
        self.progress = progress
        self.events = events
        stall = StallTracker(grace: stallGrace)
        _ = reopenIfReplaced()
    }

    deinit {
        if fd >= 0 { Glibc.close(fd) }
    }

    func close() {
        closedLock.withLock { closedFlag = true }
    }

    func seek(to offset: Int64) throws {
        guard !isClosed else { throw SourceError.closed(partPath) }
        if let failure { throw failure }
        guard offset >= 0 else { throw SourceError.readFailed("seek to \(offset) in \(partPath)") }
        position = offset
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard buffer.count > 0 else { return 0 }
        while true {
            guard !isClosed else { throw SourceError.closed(partPath) }
            if let failure { throw failure }
            if fd >= 0 {
                let count = pread(fd, buffer.baseAddress, buffer.count, off_t(position))
                if count > 0 {
                    position += Int64(count)
                    emit(stall.progressed())
                    return count
                }
                if count < 0 && errno != EINTR {
                    throw fail(.readFailed("read(\(partPath)): \(String(cString: strerror(errno)))"))
                }
                if count < 0 { continue }
            }
            // At the written end: finished, failed, or wait for more.
            switch progress() {
            case .failed(let error):
                throw fail(error)
            case .complete:
                // Bytes written before the verification are all visible now; re-read before calling it the end.
                if reopenIfReplaced() { continue }
                if fd >= 0, fileSize() > position { continue }
                emit(stall.progressed())
                guard fd >= 0 else { throw fail(.sourceUnavailable("\(finalPath) is verified in the catalog but not on disk")) }
                return 0
            case .downloading:
                if reopenIfReplaced() { continue }
                if fd >= 0, fileSize() > position { continue }
                emit(stall.waiting())
                usleep(useconds_t(pollInterval * 1_000_000))
            }
        }
    }

    private func fileSize() -> Int64 {
        var info = stat()
        return fstat(fd, &info) == 0 ? Int64(info.st_size) : 0
    }

    /// Opens the file when there is none yet, or when the `.part` (or the final file) on disk is a
    /// different inode from ours: the downloader started over. True when it switched.
    private func reopenIfReplaced() -> Bool {
        for path in [partPath, finalPath] {
            var info = stat()
            guard stat(path, &info) == 0 else { continue }
            if fd >= 0 && info.st_ino == inode { return false }
            let opened = open(path, O_RDONLY | O_CLOEXEC)
            guard opened >= 0 else { continue }
            var openedInfo = stat()
            fstat(opened, &openedInfo)
            if fd >= 0 { Glibc.close(fd) }
            fd = opened
            inode = openedInfo.st_ino
            return true
        }
        return false
    }

    private func fail(_ error: SourceError) -> SourceError {
        if failure == nil {
            failure = error
            events(error.event)
        }
        return error
    }

    private func emit(_ event: ByteSourceEvent?) {
        if let event { events(event) }
    }
}
