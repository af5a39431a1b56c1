import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// An HTTP client over libcurl (http and https only), for the origin API and media downloads.
///
/// Each transfer runs as one blocking `curl_easy_perform` on a thread of the client's own
/// `NIOThreadPool` (never on a Swift concurrency thread), bridged back with a continuation.
/// The pool starts with the first transfer, so a client that has sent nothing holds no thread.
/// Easy handles are pooled so that requests to the same origin reuse connections; all of a
/// client's handles share one DNS cache and one TLS session cache (`CurlShare`), so a handle's
/// new connection resumes a TLS session instead of a full handshake. HTTPS transfers offer
/// HTTP/2 (ALPN) and fall back to HTTP/1.1; one handle runs one transfer at a time, so HTTP/2
/// streams are not multiplexed across handles. `Configuration.transport` sets the trusted
/// CAs, the pinned keys and the proxy. libcurl
/// itself is opened by the first transfer (`CurlLibrary`); without it, calls throw `HTTPLibraryMissing`.
/// Task cancellation aborts a running transfer within about a second (curl's progress callback).
///
/// Statuses are never errors: a 404 or 500 comes back as a response. Thrown errors are
/// `HTTPClientError`. Retry and backoff belong to the caller (`HTTPClientError.isTransient`).
public final class HTTPClient: Sendable {
    private let credentials: BasicCredentials?
    private let configuration: Configuration
    /// Owned; started at the first transfer, shut down in deinit (after running transfers finish).
    private let threadPool: TransferThreads
    private let handles: CurlHandlePool

    /// - Parameters:
    ///   - credentials: sent as Basic auth on every request to the request's own origin.
    ///   - configuration: limits and the redirect policy.
    public init(credentials: BasicCredentials? = nil, configuration: Configuration = Configuration()) {
        self.credentials = credentials
        self.configuration = configuration
        threadPool = TransferThreads(count: max(1, configuration.maxConcurrentTransfers))
        handles = CurlHandlePool(maxIdle: configuration.maxIdleHandles)
    }

    deinit {
        // A call in flight holds `self`, so no transfer runs here; this only stops the idle threads.
        threadPool.shutDown()
    }

    /// Sends `request` and collects the whole response in memory.
    ///
    /// Follows redirects as `Configuration.redirects` allows (303, and 301/302 after a POST,
    /// become GET without body). Throws `HTTPClientError` (`InvalidURL`, `ConnectionFailed`,
    /// `Timeout`, `PartialBody`, `TooManyRedirects`, `ResponseTooLarge`, `Cancelled`, …).
    public func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        let outcome = try await performFollowingRedirects(request, destination: .memory(limit: configuration.maxResponseBodyBytes))
        return HTTPResponse(status: outcome.status, headers: outcome.headers, body: outcome.body, httpVersion: outcome.httpVersion)
    }

    /// Downloads `request`'s body into the file at `path`.
    ///
    /// With `offset > 0` it asks for `Range: bytes=offset-`. A 206 keeps the file's first `offset`
    /// bytes (the file must hold at least that many) and appends after them; a 200 (a server that
    /// ignores `Range`) truncates the file and writes it from byte 0. Any other status leaves the
    /// file untouched and returns its body in `DownloadResult.body`; a 416 after resuming from the
    /// full length means the file is already complete.
    ///
    /// `progress(fileSize, expectedSize)` is called on the transfer thread after each write;
    /// returning false stops the download (`Cancelled`). `request.timeoutSeconds` is a stall
    /// timeout here, not a total one.
    ///
    /// A body shorter than `Content-Length` throws `PartialBody`; like every error after the file
    /// was opened, the bytes received stay on disk and `HTTPClientError.bytesOnDisk` says how many.
    /// The file is not fsynced; callers that need durability do it (an observer's `bodyEnded`
    /// can, on the transfer thread). Writeback starts every `downloadWritebackBytes`, and for
    /// the rest when the body ends, so that such an fsync finds little left to write; a body of
    /// at least `downloadDirectBytes` skips the page cache instead (`O_DIRECT`).
    ///
    /// `observer` sees every body byte written, e.g. to hash while the bytes arrive.
    ///
    /// `receiveRate`: the body arrives no faster than this rate allows, shared with every other
    /// download given the same one (`ReceiveRate`).
    ///
    /// Runs on the caller's executor (`nonisolated(nonsending)`, like the hops below it) up to
    /// the hand-over to a transfer thread, whose answer resumes the caller there: an actor
    /// downloading many small files pays no hop to the global pool and back per file.
    nonisolated(nonsending)
        public func download(
            _ request: HTTPRequest, to path: String, resumeFrom offset: Int64 = 0,
            observer: (any DownloadBodyObserver)? = nil, receiveRate: ReceiveRate? = nil,
            progress: @escaping @Sendable (Int64, Int64?) -> Bool = { _, _ in true }
        ) async throws -> DownloadResult
    {
        precondition(offset >= 0, "negative resume offset")
        let destination = BodyDestination.file(
            path: path, resumeFrom: offset,
            errorBodyLimit: configuration.maxErrorBodyBytes, progress: progress)
        let outcome = try await performFollowingRedirects(
            request, destination: destination, observer: observer,
            receiveRate: receiveRate)
        let download = outcome.download
        return DownloadResult(
            status: outcome.status, headers: outcome.headers, resumed: download?.resumed ?? false,
            bytesWritten: download?.bytesWritten ?? 0, fileSize: download?.fileSize ?? offset,
            expectedSize: download?.expectedSize, body: outcome.body)
    }

    nonisolated(nonsending)
        private func performFollowingRedirects(
            _ request: HTTPRequest, destination: BodyDestination,
            observer: (any DownloadBodyObserver)? = nil,
            receiveRate: ReceiveRate? = nil
        ) async throws -> TransferOutcome
    {
        try await CurlLibrary.loadOffPool()
        guard let firstOrigin = URLOrigin(request.url) else {
            throw HTTPClientError(code: .invalidURL, message: "not an absolute URL: \(request.url)")
        }
        var current = request
        var sendCredentials = true
        var hops = 0
        while true {
            let outcome = try await perform(
                current, credentials: sendCredentials ? credentials : nil, destination: destination,
                observer: observer, receiveRate: receiveRate)
            guard [301, 302, 303, 307, 308].contains(outcome.status), let target = outcome.redirectURL,
                let targetOrigin = URLOrigin(target)
            else { return outcome }
            let sameOrigin = targetOrigin == firstOrigin
            switch configuration.redirects {
            case .none:
                return outcome
            case .sameOrigin(let max):
                guard sameOrigin else { return outcome }
                guard hops < max else { throw tooManyRedirects(max) }
            case .any(let max):
                guard hops < max else { throw tooManyRedirects(max) }
            }
            hops += 1
            sendCredentials = sendCredentials && sameOrigin
            current.url = target
            if outcome.status == 303 || (current.method.uppercased() == "POST" && outcome.status <= 302) {
                current.method = "GET"
                current.body = nil
            }
        }
    }

    private func tooManyRedirects(_ max: Int) -> HTTPClientError {
        HTTPClientError(code: .tooManyRedirects, message: "more than \(max) redirects")
    }

    /// One hop on a pool thread. The handle goes back to the pool whatever happens.
    ///
    /// For `send` (memory destination) the request's timeout counts from here, the wait for a
    /// free pool thread included. Task cancellation answers at once while the transfer waits for
    /// a thread, and aborts it through curl's progress callback once it runs.
    nonisolated(nonsending)
        private func perform(
            _ request: HTTPRequest, credentials: BasicCredentials?,
            destination: BodyDestination, observer: (any DownloadBodyObserver)?,
            receiveRate: ReceiveRate?
        ) async throws -> TransferOutcome
    {
        let cancellation = CancellationFlag()
        let configuration = configuration
        let handles = handles
        let queued = ContinuousClock.now
        let isTotalTimeout: Bool
        if case .memory = destination { isTotalTimeout = true } else { isTotalTimeout = false }
        let slotBox = NIOLockedValueBox<TransferSlot<TransferOutcome>?>(nil)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<TransferOutcome, Error>) in
                let slot = TransferSlot(continuation)
                slotBox.withLockedValue { $0 = slot }
                if Task.isCancelled {
                    slot.abandonIfQueued(HTTPClientError(code: .cancelled, message: "task cancelled before the transfer started"))
                    return
                }
                let timer =
                    isTotalTimeout
                    ? MultiThreadedEventLoopGroup.singleton.any().scheduleTask(
                        in: .nanoseconds(Int64(max(0, request.timeoutSeconds) * 1e9))
                    ) {
                        slot.abandonIfQueued(HTTPClientError(code: .timeout, message: "no transfer thread came free within \(request.timeoutSeconds) s"))
                    } : nil
                threadPool.pool.submit { state in
                    timer?.cancel()
                    guard slot.start() else { return }
                    guard case .active = state else {
                        slot.finish(.failure(HTTPClientError(code: .shutdown, message: "the client's thread pool no longer runs")))
                        return
                    }
                    var current = request
                    if isTotalTimeout {
                        let waited = ContinuousClock.now - queued
                        current.timeoutSeconds -= Double(waited.components.seconds) + Double(waited.components.attoseconds) / 1e18
                        guard current.timeoutSeconds > 0 else {
                            slot.finish(.failure(HTTPClientError(code: .timeout, message: "no transfer thread came free within \(request.timeoutSeconds) s")))
                            return
                        }
                    }
                    slot.finish(
                        Result {
                            let easy = try handles.checkOut()
                            defer { handles.checkIn(easy) }
                            return try Transfer.run(
                                current, credentials: credentials, configuration: configuration,
                                easy: easy, destination: destination, cancellation: cancellation,
                                observer: observer, receiveRate: receiveRate)
                        })
                }
            }
        } onCancel: {
            cancellation.cancel()
            slotBox.withLockedValue { $0 }?.abandonIfQueued(HTTPClientError(code: .cancelled, message: "task cancelled before the transfer started"))
        }
    }
}

/// A client's transfer threads: a `NIOThreadPool` of `count` threads, started when first asked for.
final class TransferThreads: Sendable {
    private let count: Int
    private let started = NIOLockedValueBox<NIOThreadPool?>(nil)

    init(count: Int) {
        self.count = count
    }

    /// The pool, started on first use.
    var pool: NIOThreadPool {
        started.withLockedValue { pool in
            if let pool { return pool }
            let new = NIOThreadPool(numberOfThreads: count)
            new.start()
            pool = new
            return new
        }
    }

    /// Stops the threads once their queue is empty; nothing when they never started.
    func shutDown() {
        started.withLockedValue { $0 }?.shutdownGracefully { _ in }
    }
}
