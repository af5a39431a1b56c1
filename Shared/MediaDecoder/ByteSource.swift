/// Bytes the decoder reads through a custom AVIOContext instead of a path.
///
/// The decoder calls `read` and `seek` on its own (blocking) decode thread, so a source may block
/// there while its bytes are still on their way (a file being downloaded, a slow stream); any
/// other thread may call `close()` to make such a wait give up.
public protocol ByteSource: AnyObject, Sendable {
    /// Blocks until at least one byte is available or the end is reached; returns 0 only at the end.
    /// Throws (a typed error with a stable name) on failure or after close().
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
    func seek(to offset: Int64) throws
    /// Total size when known (declared size of a download, Content-Length of a stream).
    var size: Int64? { get }
    /// Unblocks a pending read (it throws) and releases resources. Idempotent.
    func close()
}

/// What a source reports about its bytes while it is being read, for the player's state machine:
/// `stalled` once when a read has to wait for bytes that have not arrived yet, `resumed` when they
/// do, `failed` when the bytes will never come (the download underneath failed).
public enum ByteSourceEvent: Sendable, Equatable {
    case stalled, resumed
    case failed(name: String, message: String)
}
