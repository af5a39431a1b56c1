import Foundation
import HTTPClient
import MediaDecoder
import OriginClient

#if canImport(Glibc)
    import Glibc
#endif

/// A media URL on the origin read through `OriginClient` (libcurl, the `.streaming` retry rules)
/// as `Range` requests of adaptive size, written to a file beside the HTTP cache and read from it.
///
/// A fetch task runs ahead of the reader from the reader's position to the end, then fills any
/// gap left before it (after a seek), so a played stream ends up whole and enters the cache; a
/// seek makes the next request start at the new position. Chunks start at 64 KiB (so decoding
/// starts soon) and follow the measured throughput to about one second each, up to `maxChunk`;
/// a transfer that fails for network reasons is retried forever with the policy's capped backoff
/// and a smaller chunk (TIDAL: network errors are retried indefinitely). 5xx/429 are retried by
/// the client (3 times while streaming); a 4xx first fetches a fresh URL once through `refresh`
/// (TIDAL's "handbrake"), then fails.
///
/// A read at a byte not yet fetched waits: `.stalled` once the wait outlasts `stallGrace`,
/// `.resumed` when the bytes arrive.
///
/// Threading: `read`/`seek` come from the decode thread, the fetcher runs as a task, `close()`
/// from anywhere; shared state is guarded by `condition`. The descriptor is closed in deinit only,
/// so neither side can ever use a recycled descriptor.
final class HTTPStreamSource: ByteSource, @unchecked Sendable {
    struct Options: Sendable {
        var firstChunk = 64 * 1024
        var minChunk = 64 * 1024
        var maxChunk = 1024 * 1024
        /// Chunk length aimed for, in seconds of transfer at the measured rate.
        var chunkSeconds = 1.0
        var requestTimeout = 20.0
        var stallGrace = 0.1
        /// Network failures retried inside one request before this source shrinks its chunk
        /// and tries again itself (forever).
        var retry = RetryPolicy.streamingRequest
    }

    let cachePath: String
    private let origin: OriginClient
    private let cache: HTTPCache?
    private let options: Options
    private let refresh: (@Sendable () async throws -> String)?
    private let events: @Sendable (ByteSourceEvent) -> Void
    private let temporaryPath: String
    private let fd: Int32

    private let condition = NSCondition()
    // Guarded by `condition`.
    private var url: String
    private var knownSize: Int64?
    private var covered = ByteRanges()
    private var position: Int64 = 0
    private var failure: (any Error)?
    private var closed = false
    private var stall: StallTracker
    private var fetcher: Task<Void, Never>?
    // Touched by the fetch task only: the first answer's validator and caching rules.
    private var etag: String?
    private var cacheControl = CacheControl(noStore: true)
    /// Requests sent and bytes received, for tests and logs.
    private(set) var requestCount = 0

    /// Starts fetching `url` (absolute, on the origin) right away.
    /// - Parameters:
    ///   - declaredSize: the size playbackinfo announced, until the first answer says.
    ///   - refresh: a new URL for the same product (a new playbackinfo), asked once after a 4xx.
    init(
        url: String, origin: OriginClient, cache: HTTPCache?, declaredSize: Int64? = nil, options: Options = Options(),
        refresh: (@Sendable () async throws -> String)? = nil,
        events: @escaping @Sendable (ByteSourceEvent) -> Void
    ) throws {
        self.url = url
        self.origin = origin
        self.cache = cache
        self.options = options
        self.refresh = refresh
        self.events = events
        cachePath = HTTPCache.path(of: url)
        knownSize = declaredSize
        stall = StallTracker(grace: options.stallGrace)
        if let cache {
            temporaryPath = cache.temporaryFile(for: cachePath)
        } else {
            temporaryPath = NSTemporaryDirectory() + "/cassette-stream-\(UUID().uuidString.prefix(8)).part"
        }
        fd = Glibc.open(temporaryPath, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw SourceError.readFailed("cannot create \(temporaryPath): \(String(cString: strerror(errno)))")
        }
        // Without a cache the file is only our buffer: nobody else needs its name.
        if cache == nil { unlink(temporaryPath) }
        fetcher = Task.detached { [self] in await fetchLoop() }
    }

    deinit {
        Glibc.close(fd)
    }

    var size: Int64? { condition.withLock { knownSize } }

    /// Bytes fetched so far.
    var bytesFetched: Int64 { condition.withLock { covered.byteCount } }

    func close() {
        let task: Task<Void, Never>? = condition.withLock {
            guard !closed else { return nil }
            closed = true
            condition.broadcast()
            return fetcher
        }
        task?.cancel()
    }

    func seek(to offset: Int64) throws {
        try condition.withLock {
            if closed { throw SourceError.closed(cachePath) }
            if let failure { throw failure }
            guard offset >= 0 else { throw SourceError.readFailed("seek to \(offset) in \(cachePath)") }
            position = offset
            condition.broadcast()
        }
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard buffer.count > 0 else { return 0 }
        while true {
            enum Step { case read(offset: Int64, count: Int), end, wait }
            var event: ByteSourceEvent?
            let step: Step = try condition.withLock {
                if closed { throw SourceError.closed(cachePath) }
                if let failure { throw failure }
                if let knownSize, position >= knownSize {
                    event = stall.progressed()
                    return .end
                }
                if let end = covered.end(containing: position) {
                    event = stall.progressed()
                    return .read(offset: position, count: Int(min(Int64(buffer.count), end - position)))
                }
                event = stall.waiting()
                return .wait
            }
            if let event { events(event) }
            switch step {
            case .end:
                return 0
            case .read(let offset, let count):
                let got = pread(fd, buffer.baseAddress, count, off_t(offset))
                guard got > 0 else { throw SourceError.readFailed("read(\(temporaryPath)): \(String(cString: strerror(errno)))") }
                condition.withLock { if position == offset { position += Int64(got) } }
                return got
            case .wait:
                condition.withLock {
                    if !closed && failure == nil && covered.end(containing: position) == nil {
                        _ = condition.wait(until: Date().addingTimeInterval(0.05))
                    }
                }
            }
        }
    }

    // MARK: Fetching

    private struct Plan {
        var url: String
        var range: Range<Int64>
    }

    /// The next range to fetch: from the reader's position on, else the first gap before it;
    /// nil once everything is here (or the source is closed or failed).
    private func nextPlan(chunk: Int) -> Plan? {
        condition.withLock {
            guard !closed, failure == nil else { return nil }
            let start = covered.firstGap(from: position, upTo: knownSize) ?? covered.firstGap(from: 0, upTo: knownSize)
            guard let start else { return nil }
            var end = start + Int64(chunk)
            if let next = covered.nextStart(after: start) { end = min(end, next) }
            if let knownSize { end = min(end, knownSize) }
            return Plan(url: url, range: start..<end)
        }
    }

    /// Fetches until everything is here, the source fails or it is closed; then the file goes
    /// into the cache or away.
    private func fetchLoop() async {
        await fetchRanges()
        finish()
    }

    private func fetchRanges() async {
        var chunk = options.firstChunk
        var networkFailures = 0
        var refreshed = false
        while let plan = nextPlan(chunk: chunk) {
            let started = ContinuousClock.now
            let request = HTTPRequest(
                method: "GET", url: plan.url,
                headers: ["Range": "bytes=\(plan.range.lowerBound)-\(plan.range.upperBound - 1)"],
                timeoutSeconds: options.requestTimeout)
            let response: HTTPResponse
            do {
                condition.withLock { requestCount += 1 }
                response = try await origin.send(request, retry: options.retry)
            } catch let error as OriginError where error.transportError != nil && !error.isTLSFailure {
                // A refused TLS edge is not a flaky link: it fails the stream below, at once.
                if isClosed { return }
                // The link is down or too slow for this chunk: smaller chunks, and keep trying.
                chunk = max(options.minChunk, chunk / 2)
                try? await Task.sleep(nanoseconds: UInt64(options.retry.networkDelay(retry: networkFailures) * 1e9))
                networkFailures += 1
                continue
            } catch {
                return fail(error)
            }
            networkFailures = 0
            if isClosed { return }
            let responseTag = response.headers["etag"]
            if etag == nil {
                etag = responseTag
                cacheControl = CacheControl(header: response.headers["cache-control"])
            } else if let responseTag, responseTag != etag, response.status == 206 {
                return fail(SourceError.streamChanged(plan.url))
            }
            switch response.status {
            case 206:
                guard let range = Self.contentRange(response.headers["content-range"]), !response.body.isEmpty else {
                    return fail(SourceError.sourceUnavailable("\(cachePath): a 206 answer without a usable Content-Range or body"))
                }
                guard store(response.body, at: range.start, total: range.total) else { return }
            case 200:
                // The server ignored Range: this is the whole body.
                guard store(response.body, at: 0, total: Int64(response.body.count)) else { return }
            case 416:
                let total = Self.contentRange(response.headers["content-range"])?.total
                condition.withLock {
                    knownSize = total ?? min(knownSize ?? plan.range.lowerBound, plan.range.lowerBound)
                    condition.broadcast()
                }
            case 400..<500 where !refreshed && refresh != nil:
                refreshed = true
                do {
                    let fresh = try await refresh!()
                    condition.withLock { url = fresh }
                } catch {
                    return fail(error)
                }
                continue
            default:
                return fail(
                    SourceError.sourceUnavailable(
                        "the origin answered HTTP \(response.status) for \(cachePath): \(String(decoding: response.body.prefix(300), as: UTF8.self))"))
            }
            let elapsed = started.duration(to: .now).components
            let seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
            if seconds > 0, !response.body.isEmpty {
                let target = Double(response.body.count) / seconds * options.chunkSeconds
                chunk = Int(min(Double(options.maxChunk), max(Double(options.minChunk), target)))
            }
        }
    }

    private var isClosed: Bool { condition.withLock { closed } }

    /// Writes fetched bytes at their offset and publishes them. False when the source failed.
    private func store(_ body: [UInt8], at offset: Int64, total: Int64?) -> Bool {
        var written = 0
        while written < body.count {
            let result = body.withUnsafeBytes { bytes in
                pwrite(fd, bytes.baseAddress! + written, body.count - written, off_t(offset) + off_t(written))
            }
            if result < 0 {
                if errno == EINTR { continue }
                fail(SourceError.readFailed("write(\(temporaryPath)): \(String(cString: strerror(errno)))"))
                return false
            }
            written += result
        }
        condition.withLock {
            if let total { knownSize = total }
            covered.insert(offset..<(offset + Int64(body.count)))
            condition.broadcast()
        }
        return true
    }

    /// Hands a complete file to the cache (when it may keep it); removes an incomplete one.
    private func finish() {
        let (complete, size) = condition.withLock {
            (failure == nil && knownSize.map { covered.covers(size: $0) } ?? false, knownSize)
        }
        guard let cache else { return }
        if complete, let size {
            cache.commit(temporary: temporaryPath, path: cachePath, size: size, etag: etag, cacheControl: cacheControl)
        } else {
            unlink(temporaryPath)
        }
    }

    private func fail(_ error: any Error) {
        let first: Bool = condition.withLock {
            guard failure == nil, !closed else { return false }
            failure = error
            condition.broadcast()
            return true
        }
        if cache != nil { unlink(temporaryPath) }
        guard first else { return }
        if let error = error as? SourceError {
            events(error.event)
        } else if let error = error as? OriginError {
            events(.failed(name: error.name, message: error.message))
        } else {
            events(.failed(name: "SourceUnavailable", message: "\(error)"))
        }
    }

    /// `bytes first-last/total` → (first, total); `total` nil for `*`.
    static func contentRange(_ header: String?) -> (start: Int64, total: Int64?)? {
        guard let header, header.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = header.dropFirst(6)
        let parts = spec.split(separator: "/", maxSplits: 1)
        guard parts.count == 2 else { return nil }
        let total = Int64(parts[1].trimmingCharacters(in: .whitespaces))
        let range = parts[0].split(separator: "-")
        guard let first = range.first.flatMap({ Int64($0.trimmingCharacters(in: .whitespaces)) }) else {
            // `bytes */total` (416)
            return parts[0].trimmingCharacters(in: .whitespaces) == "*" ? (0, total) : nil
        }
        return (first, total)
    }
}

extension RetryPolicy {
    /// One request of a stream someone listens to (a chunk, a segment): the streaming rules with
    /// two quick network retries, after which the stream's own loop tries again, forever.
    static let streamingRequest: RetryPolicy = {
        var policy = RetryPolicy.streaming
        policy.networkRetries = 2
        return policy
    }()
}
