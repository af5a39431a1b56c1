import NIOPosix

/// The one way async code makes a blocking system call (file I/O, `statvfs`, `fsync`, D-Bus,
/// hashing a large file, a catalog open): the call runs on NIO's blocking thread pool while
/// the caller suspends.
///
/// Swift's cooperative pool has one thread per core and NIO's event loops serve every
/// socket; a blocking call on either stalls the whole service on a one- or two-core device.
/// Work that blocks for its whole life (audio output, the downloader's commit queue) gets a
/// dedicated thread instead.
public enum BlockingIO {
    public static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await NIOThreadPool.singleton.runIfActive(body)
    }

    /// For calls that cannot fail (or whose failure is part of `T`).
    public static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        do {
            return try await NIOThreadPool.singleton.runIfActive(body)
        } catch {
            // Only when the pool is shutting down (the process is exiting): run it here.
            return body()
        }
    }
}
