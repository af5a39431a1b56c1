import Foundation
import HTTPClient
import NIOConcurrencyHelpers
import Wire

/// The services' one way to the content origin (docs/origin.md): Basic auth, JSON in and out, the
/// retry rules of `RetryPolicy`, errors named by `OriginError`, URLs from the server kept on the
/// origin, and the last server time seen. Built on `HTTPClient` (libcurl): connections are reused
/// and transfers run in parallel up to `HTTPClient.Configuration.maxConcurrentTransfers`.
public final class OriginClient: Sendable {
    /// The configured origin, without a trailing slash; `/v1/…` paths are appended to it.
    public let baseURL: String
    /// The configured origin's scheme, host and port as curl's parser reads them (the parser
    /// that decides where a request goes), parsed on first use: parsing it at start would open
    /// libcurl in a daemon that may never talk to the network. `init` checks the URL's shape.
    private let parsedOrigin = NIOLockedValueBox<URLOrigin?>(nil)
    private let http: HTTPClient
    private let requestTimeout: Double
    private let lastSample = NIOLockedValueBox<ServerTimeSample?>(nil)
    private let lastAuth = NIOLockedValueBox<AuthAnswer?>(nil)
    private let sleep: @Sendable (Double) async throws -> Void
    private let offline: @Sendable () -> Bool

    /// - Parameters:
    ///   - sleep: waits between retries; tests pass a recorder instead of real time.
    ///   - offline: asked before every request; while true nothing is sent and the request fails
    ///     with `OriginError.offlineMode()` (the app's offline mode).
    public init(
        baseURL: String, credentials: BasicCredentials?,
        configuration: HTTPClient.Configuration = HTTPClient.Configuration(),
        requestTimeout: Double = 30,
        sleep: @escaping @Sendable (Double) async throws -> Void = { seconds in
            try await Task.sleep(nanoseconds: UInt64(max(0, seconds) * 1e9))
        },
        offline: @escaping @Sendable () -> Bool = { false }
    ) throws {
        let trimmed = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        guard Self.hasHTTPShape(trimmed) else { throw Self.invalidOrigin(baseURL) }
        self.baseURL = trimmed
        self.http = HTTPClient(credentials: credentials, configuration: configuration)
        self.requestTimeout = requestTimeout
        self.sleep = sleep
        self.offline = offline
    }

    /// The newest server time seen in any answer (`serverTime`, else the `Date` header).
    public var lastServerTime: ServerTimeSample? { lastSample.withLockedValue { $0 } }

    /// Whether the origin took the credentials the last time it answered an API request: a
    /// 2xx accepts them, a 401 (or 403 with subStatus 6001) refuses them; nil before any answer.
    public struct AuthAnswer: Sendable, Equatable {
        public var accepted: Bool
        public var at: Date
        /// The refusal, for status reports.
        public var error: OriginError?
    }

    public var lastAuthAnswer: AuthAnswer? { lastAuth.withLockedValue { $0 } }

    // MARK: JSON API

    /// `GET baseURL + path?query` and its JSON object; any non-2xx answer throws `OriginError`.
    public func get(_ path: String, query: [String: String] = [:], retry: RetryPolicy) async throws -> JSONValue {
        try await json(HTTPRequest(method: "GET", url: apiURL(path, query: query), timeoutSeconds: requestTimeout), retry: retry)
    }

    /// `POST baseURL + path` with a JSON body and its JSON object answer.
    public func post(_ path: String, body: JSONValue, retry: RetryPolicy) async throws -> JSONValue {
        let request = HTTPRequest(
            method: "POST", url: apiURL(path, query: [:]),
            headers: ["Content-Type": "application/json"], body: body.serialized(),
            timeoutSeconds: requestTimeout)
        return try await json(request, retry: retry)
    }

    /// `DELETE baseURL + path` and its JSON object answer.
    public func delete(_ path: String, retry: RetryPolicy) async throws -> JSONValue {
        try await json(HTTPRequest(method: "DELETE", url: apiURL(path, query: [:]), timeoutSeconds: requestTimeout), retry: retry)
    }

    /// Sends any request with the retry rules and returns the final answer, whatever its status
    /// (5xx and 429 only once retries ran out). Throws `OriginError` when no answer came.
    public func send(_ request: HTTPRequest, retry: RetryPolicy) async throws -> HTTPResponse {
        if offline() { throw OriginError.offlineMode() }
        return try await withRetries(
            retry,
            attempt: { timeLeft in
                var request = request
                if let timeLeft { request.timeoutSeconds = min(request.timeoutSeconds, max(0.001, timeLeft)) }
                return try await http.send(request)
            },
            retryable: { response in
                note(headers: response.headers)
                return Self.isRetryable(response.status)
                    ? RetryableAnswer(
                        status: response.status, headers: response.headers,
                        body: response.body) : nil
            })
    }

    // MARK: Media

    /// Opens libcurl on the blocking pool. `resolveURL`, `relativeURL` and `mediaURL` are
    /// synchronous and parse with curl, which opens it (about 5 ms of mapping) on the calling
    /// thread the first time: a daemon that calls them from its tasks calls this once at start,
    /// so that never happens on a Swift concurrency thread. Without libcurl they throw later.
    public func openURLParser() async {
        try? await CurlLibrary.loadOffPool()
    }

    /// Makes a URL from the server (`url` of a station item, a manifest, an image) absolute, and
    /// refuses it unless it stays on the configured origin over http(s): a `file:` URL or another
    /// host would let a hostile or broken server make the device read or fetch what it should not.
    public func resolveURL(_ url: String) throws -> String {
        let origin = try configuredOrigin()
        if url.hasPrefix("/") && !url.hasPrefix("//") {
            return "\(origin.scheme)://\(Self.hostPart(origin))\(url)"
        }
        guard let target = URLOrigin(url) else {
            throw OriginError(name: "ForeignURL", message: "the origin sent a URL Cassette cannot use: \(url)")
        }
        guard target == origin else {
            throw OriginError(
                name: "ForeignURL",
                message: "the origin sent a URL on another host or scheme (\(url)); only \(origin.scheme)://\(Self.hostPart(origin)) is allowed")
        }
        return url
    }

    /// A URL from the server kept relative to the origin: its path and query (checked by
    /// `resolveURL` first), so content stored on the device survives the origin moving to
    /// another address. `mediaURL` makes it absolute again at use.
    public func relativeURL(_ url: String) throws -> String {
        Self.pathAndQuery(of: try resolveURL(url))
    }

    /// A stored URL on the configured origin as it is now: a relative one (`relativeURL`) gets
    /// the origin's scheme, host and port; an absolute one kept by an earlier version keeps its
    /// path and query and is moved onto the origin, whatever address it was stored with.
    /// Without libcurl it is the configured URL's scheme and authority as written, and the
    /// request made with it fails with `HTTPLibraryMissing`.
    public func mediaURL(_ stored: String) -> String {
        guard let origin = try? configuredOrigin() else { return Self.schemeAndAuthority(baseURL) + Self.pathAndQuery(of: stored) }
        return "\(origin.scheme)://\(Self.hostPart(origin))\(Self.pathAndQuery(of: stored))"
    }

    /// `/path?query` of an absolute or origin-relative URL, without its fragment.
    static func pathAndQuery(of url: String) -> String {
        var rest = Substring(url)
        if !url.hasPrefix("/") || url.hasPrefix("//") {
            if let schemeEnd = url.range(of: "://") { rest = url[schemeEnd.upperBound...] } else if url.hasPrefix("//") { rest = rest.dropFirst(2) }
            guard let slash = rest.firstIndex(of: "/") else { return "/" }
            rest = rest[slash...]
        }
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        return String(rest)
    }

    /// Downloads `url` (as returned by `resolveURL` or `mediaURL`) into `path`, resuming from `offset` with
    /// `Range` and, after each network failure, from what is on disk then. 5xx/429 answers are
    /// retried per `retry`; a final 2xx or 416 is returned for the caller to judge; any other
    /// status throws `OriginError`. `observer` sees every body byte written (hashing on the fly),
    /// across the retries. `receiveRate` bounds how fast the body arrives (`ReceiveRate`).
    nonisolated(nonsending)
        public func download(
            _ url: String, to path: String, resumeFrom offset: Int64 = 0, retry: RetryPolicy,
            stallTimeout: Double = 30, observer: (any DownloadBodyObserver)? = nil, receiveRate: ReceiveRate? = nil,
            progress: @escaping @Sendable (Int64, Int64?) -> Bool = { _, _ in true }
        ) async throws -> DownloadResult
    {
        if offline() { throw OriginError.offlineMode() }
        var offset = offset
        let request = HTTPRequest(method: "GET", url: url, timeoutSeconds: stallTimeout)
        let result = try await withRetries(
            retry,
            progressed: { error in
                // Resume from what is on disk now; bytes moved since the last try means a slow but
                // alive link, so the backoff starts over.
                defer { offset = error.bytesOnDisk ?? offset }
                return (error.bytesOnDisk ?? offset) > offset
            },
            attempt: { _ in
                try await http.download(
                    request, to: path, resumeFrom: offset, observer: observer, receiveRate: receiveRate,
                    progress: progress)
            },
            retryable: { result in
                note(headers: result.headers)
                return Self.isRetryable(result.status)
                    ? RetryableAnswer(
                        status: result.status, headers: result.headers,
                        body: result.body) : nil
            })
        if (200..<300).contains(result.status) || result.status == 416 { return result }
        throw OriginError(status: result.status, body: result.body)
    }

    // MARK: Internals

    /// A 5xx or 429 answer that may be tried again.
    private struct RetryableAnswer {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
    }

    /// The retry loop `send` and `download` share. Network failures are retried per
    /// `retry.networkRetries` with a doubling, capped delay that starts over when `progressed`
    /// says bytes moved; an answer for which `retryable` returns one (a 5xx or 429) is
    /// retried per `retry.statusRetries`, honouring its `Retry-After`. With
    /// `retry.deadlineSeconds` or `retry.endsBy`, `attempt` gets the time left (to bound its own
    /// timeout), no wait runs past the deadline, and giving up on a network failure or a 5xx is
    /// `OriginUnreachable`. A transfer stopped because the calling task was cancelled (a stop)
    /// throws `CancellationError`: that is not the origin failing.
    nonisolated(nonsending)
        private func withRetries<Outcome>(
            _ retry: RetryPolicy,
            progressed: (HTTPClientError) -> Bool = { _ in false },
            attempt: nonisolated(nonsending) (_ timeLeft: Double?) async throws -> Outcome,
            retryable: (Outcome) -> RetryableAnswer?
        ) async throws -> Outcome
    {
        let started = ContinuousClock.now
        func elapsed() -> Double {
            let duration = ContinuousClock.now - started
            return Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        }
        func timeLeft() -> Double? {
            let relative = retry.deadlineSeconds.map { $0 - elapsed() }
            let absolute = retry.endsBy.map { end -> Double in
                let left = ContinuousClock.now.duration(to: end)
                return Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18
            }
            switch (relative, absolute) {
            case let (r?, a?): return min(r, a)
            case let (r, a): return r ?? a
            }
        }
        func fits(_ delay: Double) -> Bool { timeLeft().map { delay < $0 } ?? true }
        var statusRetries = 0
        var networkRetries = 0
        while true {
            if let left = timeLeft(), left <= 0 { throw OriginError.deadlinePassed(after: elapsed()) }
            let outcome: Outcome
            do {
                outcome = try await attempt(timeLeft())
            } catch let error as HTTPClientError where error.isTransient {
                if progressed(error) { networkRetries = 0 }
                let delay = retry.networkDelay(retry: networkRetries)
                guard retry.networkRetries.map({ networkRetries < $0 }) ?? true, fits(delay) else { throw OriginError(transport: error) }
                try await sleep(delay)
                networkRetries += 1
                continue
            } catch let error as HTTPClientError {
                if error.code == .cancelled, Task.isCancelled { throw CancellationError() }
                throw OriginError(transport: error)
            }
            networkRetries = 0
            guard let answer = retryable(outcome) else { return outcome }
            let delay = retry.statusDelay(retry: statusRetries, retryAfter: Self.retryAfter(answer.headers))
            if statusRetries < retry.statusRetries, fits(delay) {
                try await sleep(delay)
                statusRetries += 1
                continue
            }
            if retry.hasDeadline, (500..<600).contains(answer.status) {
                throw OriginError.unreachable(status: answer.status, body: answer.body, after: elapsed())
            }
            return outcome
        }
    }

    /// The configured origin, parsed by curl on the first call (which opens libcurl, once).
    /// Throws `OriginUnreachable` naming `HTTPLibraryMissing` without libcurl, and
    /// `InvalidOriginURL` when curl refuses a URL that `init` let through.
    private func configuredOrigin() throws -> URLOrigin {
        try parsedOrigin.withLockedValue { cached in
            if let cached { return cached }
            do throws(HTTPClientError) {
                try CurlLibrary.load()
            } catch {
                throw OriginError(transport: error)
            }
            guard let parsed = URLOrigin(baseURL), ["http", "https"].contains(parsed.scheme) else {
                throw Self.invalidOrigin(baseURL)
            }
            cached = parsed
            return parsed
        }
    }

    /// `http://` or `https://` (any case), then a host: the check at start, without curl (whose
    /// parser then has the last word at first use) and without Foundation's URL parser (which
    /// would map ICU's data into every daemon).
    static func hasHTTPShape(_ url: String) -> Bool {
        let lower = url.lowercased()
        guard let scheme = ["http://", "https://"].first(where: { lower.hasPrefix($0) }) else { return false }
        let rest = lower.dropFirst(scheme.count)
        return !rest.isEmpty && !rest.hasPrefix("/") && !rest.contains(where: \.isWhitespace)
    }

    private static func invalidOrigin(_ url: String) -> OriginError {
        OriginError(name: "InvalidOriginURL", message: "the origin URL \(url) is not an http(s) URL; fix --origin or the config's origin")
    }

    /// `scheme://authority` of an absolute URL as written.
    private static func schemeAndAuthority(_ url: String) -> String {
        guard let schemeEnd = url.range(of: "://") else { return url }
        let rest = url[schemeEnd.upperBound...]
        return String(url[..<(rest.firstIndex(of: "/") ?? url.endIndex)])
    }

    private static func hostPart(_ origin: URLOrigin) -> String {
        let defaultPort = origin.scheme == "https" ? "443" : "80"
        let host = origin.host.contains(":") && !origin.host.hasPrefix("[") ? "[\(origin.host)]" : origin.host
        return origin.port == defaultPort ? host : "\(host):\(origin.port)"
    }

    private func apiURL(_ path: String, query: [String: String]) -> String {
        var url = baseURL + (path.hasPrefix("/") ? path : "/" + path)
        if !query.isEmpty {
            var allowed = CharacterSet.urlQueryAllowed
            allowed.remove(charactersIn: "&=+?#")
            url +=
                "?"
                + query.sorted { $0.key < $1.key }.map { key, value in
                    "\(key.addingPercentEncoding(withAllowedCharacters: allowed) ?? key)=\(value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value)"
                }.joined(separator: "&")
        }
        return url
    }

    private func json(_ request: HTTPRequest, retry: RetryPolicy) async throws -> JSONValue {
        let response = try await send(request, retry: retry)
        guard (200..<300).contains(response.status) else {
            var error = OriginError(status: response.status, body: response.body)
            error.answer = try? JSONValue.parse(response.body)
            if error.isUnauthorized { lastAuth.withLockedValue { $0 = AuthAnswer(accepted: false, at: Date(), error: error) } }
            throw error
        }
        lastAuth.withLockedValue { $0 = AuthAnswer(accepted: true, at: Date(), error: nil) }
        let value: JSONValue
        do {
            value = try JSONValue.parse(response.body)
        } catch {
            throw OriginError.badResponse("\(request.method) \(request.url): \(error)")
        }
        guard value.objectValue != nil else { throw OriginError.badResponse("\(request.url) did not answer a JSON object") }
        if let text = value["serverTime"]?.stringValue, let date = UTCTimestamp.parseRFC3339(text) {
            record(date)
        }
        return value
    }

    private func note(headers: [String: String]) {
        if let text = headers["date"], let date = ServerTimeSample.parseHTTPDate(text) { record(date) }
    }

    /// Keeps the newest sample: a server time older than one already seen (a stale cache, a
    /// second-precision Date header after a millisecond serverTime) never moves it back.
    private func record(_ date: Date) {
        let sample = ServerTimeSample(serverTime: date)
        lastSample.withLockedValue { current in
            if let current, current.carriedForward(to: sample.bootNanos) > date { return }
            current = sample
        }
    }

    static func isRetryable(_ status: Int) -> Bool { status == 429 || (500..<600).contains(status) }

    /// `Retry-After` as seconds, or as an HTTP date relative to now.
    static func retryAfter(_ headers: [String: String]) -> Double? {
        guard let text = headers["retry-after"]?.trimmingCharacters(in: .whitespaces) else { return nil }
        if let seconds = Double(text) { return max(0, seconds) }
        return ServerTimeSample.parseHTTPDate(text).map { max(0, $0.timeIntervalSinceNow) }
    }
}
