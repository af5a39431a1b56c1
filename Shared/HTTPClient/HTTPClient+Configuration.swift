extension HTTPClient {
    /// Which redirects the client follows itself. A redirect it does not follow comes back as
    /// the 3xx response, `location` header included.
    public enum RedirectPolicy: Sendable, Equatable {
        /// Follow none.
        case none
        /// Follow up to `max` redirects that stay on the same scheme, host and port. The default:
        /// the origin's credentials are never sent elsewhere, and no other host is contacted.
        case sameOrigin(max: Int)
        /// Follow up to `max` redirects anywhere. Credentials are dropped once the origin changes.
        case any(max: Int)
    }

    /// The client's limits, named and documented once.
    public struct Configuration: Sendable {
        /// Transfers that run at once; each holds one thread of the client's pool while it runs.
        /// Later requests queue. Downloads hold their thread for as long as the file takes.
        public var maxConcurrentTransfers: Int = 4
        /// Easy handles kept for reuse (each keeps its idle connections alive for reuse).
        public var maxIdleHandles: Int = 4
        /// Time allowed to resolve and connect, per attempt.
        public var connectTimeoutSeconds: Double = 10
        /// `send` fails with `ResponseTooLarge` past this many body bytes. Downloads are not limited.
        public var maxResponseBodyBytes: Int = 16 << 20
        /// Non-2xx bodies kept by `download` (error JSON); the rest is discarded.
        public var maxErrorBodyBytes: Int = 64 << 10
        public var redirects: RedirectPolicy = .sameOrigin(max: 5)
        /// curl's receive buffer for downloads (`CURLOPT_BUFFERSIZE`, at most 10 MiB): each
        /// buffer is one write to the file.
        public var downloadBufferBytes: Int = 256 << 10
        /// Each time a download has written this many more bytes, the kernel is asked to start
        /// writing them out (`sync_file_range`, not waited for): a caller's final fsync then
        /// finds little left, so disk and network work overlap, and dirty memory stays bounded;
        /// the rest (a small file's whole body) when the body ends. 0 leaves writeback to the kernel.
        public var downloadWritebackBytes: Int = 8 << 20
        /// Downloads that skip the page cache (`O_DIRECT`): a body expected (from its length)
        /// to bring at least this many bytes is gathered into a few aligned 2 MiB chunks that a
        /// writer thread of its own writes while the next fills, and a body of at most 1 MiB is
        /// held whole and written when it ends. One copy of each byte instead of two (into the
        /// page cache, then the kernel's writeback), and a caller's final fsync is left with
        /// the metadata. Up to 8 MiB received may be in memory while the transfer runs; all of
        /// it is in the file when `download` returns, also after a failure or a cancel. A link
        /// that does not fill the first chunk (or the small body) within 250 ms is written as
        /// it comes instead, so a reader of the growing file never waits on it. 0 = never (the
        /// default).
        public var downloadDirectBytes: Int = 0
        public var userAgent: String = "Cassette"
        /// Which certificates to trust, which keys to accept and which proxy to go through.
        public var transport = Transport()

        public init() {}
    }
}
