import Pacing

/// How often, and how patiently, a request to the origin is tried again (docs/origin.md, "Retries",
/// after the TIDAL seed): 5xx and 429 are retried a fixed number of times with a doubling delay
/// (500, 1000, 2000 ms …) or the server's `Retry-After`; other 4xx never; network errors and
/// timeouts forever, at a delay that doubles up to a cap and falls back to the start whenever
/// bytes moved (ExoPlayer/Media3's model: a slow but alive link is not a failing one).
/// A policy with a `deadlineSeconds` bounds all of that, attempts included, for a caller who waits.
public struct RetryPolicy: Sendable, Equatable {
    /// Retries after a 5xx or 429 before the error is returned.
    public var statusRetries: Int
    /// First delay of both schedules, in seconds; each retry doubles it.
    public var baseDelay: Double
    /// Longest wait after a 5xx/429 (Retry-After is honoured up to this).
    public var maxStatusDelay: Double
    /// Network failures in a row before giving up; nil retries forever.
    public var networkRetries: Int?
    /// Longest wait between network retries.
    public var maxNetworkDelay: Double
    /// The whole call, every attempt and wait included, ends within this many seconds; nil: no
    /// bound beyond the retry counts. Past it, an origin that did not answer usefully (no
    /// connection, no answer, only 5xx) is `OriginUnreachable`.
    public var deadlineSeconds: Double?
    /// One end shared by every request made with this policy (`startingNow()`): a socket call
    /// that makes several requests in turn passes the same policy to each, and all of them
    /// together end by then. Past it, like past `deadlineSeconds`, the origin is `OriginUnreachable`.
    public var endsBy: ContinuousClock.Instant?

    public init(
        statusRetries: Int, baseDelay: Double = 0.5, maxStatusDelay: Double = 60,
        networkRetries: Int?, maxNetworkDelay: Double, deadlineSeconds: Double? = nil
    ) {
        self.statusRetries = statusRetries
        self.baseDelay = baseDelay
        self.maxStatusDelay = maxStatusDelay
        self.networkRetries = networkRetries
        self.maxNetworkDelay = maxNetworkDelay
        self.deadlineSeconds = deadlineSeconds
    }

    /// This policy for one socket call, starting now: every request made with the result ends
    /// within `deadlineSeconds` of this moment, however many the call makes one after another
    /// (each request's own `deadlineSeconds` still applies too). Unchanged without a deadline.
    public func startingNow() -> RetryPolicy {
        guard let deadlineSeconds else { return self }
        return ending(by: .now + .milliseconds(Int64(deadlineSeconds * 1000)))
    }

    /// This policy with every request made with it ending by `instant` at the latest.
    public func ending(by instant: ContinuousClock.Instant) -> RetryPolicy {
        var bounded = self
        bounded.endsBy = min(endsBy ?? instant, instant)
        return bounded
    }

    /// Whether giving up is bounded in time (`deadlineSeconds` or `endsBy`): running out of it
    /// with no useful answer is then `OriginUnreachable`.
    public var hasDeadline: Bool { deadlineSeconds != nil || endsBy != nil }

    /// Downloads for offline use: nobody is waiting, so be patient.
    public static let offlining = RetryPolicy(statusRetries: 9, networkRetries: nil, maxNetworkDelay: 30)
    /// Streaming while someone listens: give up on a failing server quickly, keep trying a flaky link.
    public static let streaming = RetryPolicy(statusRetries: 3, networkRetries: nil, maxNetworkDelay: 5)
    /// A socket call someone waits for (docs/protocol.md: an answer within 10 s): the offlining
    /// schedule, cut off after 8 s in all; then `OriginUnreachable`.
    public static let interactive = RetryPolicy(
        statusRetries: 9, maxStatusDelay: 2, networkRetries: nil,
        maxNetworkDelay: 2, deadlineSeconds: 8)
    /// One attempt within the interactive deadline: a call someone waits for, to an origin
    /// already known to be unreachable (an answer in time still counts, a silence ends at 8 s).
    public static let interactiveOnce = RetryPolicy(
        statusRetries: 0, networkRetries: 0, maxNetworkDelay: 0,
        deadlineSeconds: 8)
    /// One attempt; the caller has its own schedule (the reporter's delivery loop).
    public static let none = RetryPolicy(statusRetries: 0, networkRetries: 0, maxNetworkDelay: 0)

    /// A TLS failure (`TLSFailed`) is retried like an unreachable origin (the edge's certificate
    /// may be fixed), but never sooner than this many seconds after the last attempt: a
    /// handshake that fails costs the edge and the device more than a refused connection.
    public static let tlsRetrySeconds: Double = 60

    /// The shortest wait before `error`'s request may be tried again: `tlsRetrySeconds` after a
    /// TLS failure, else 0 (the caller's own schedule).
    public static func minimumDelay(after error: any Error) -> Double {
        (error as? OriginError)?.isTLSFailure == true ? tlsRetrySeconds : 0
    }

    /// The wait before status retry number `retry` (0-based): 0.5, 1, 2, 4 … s, or the server's
    /// `Retry-After` when it gave one, capped either way.
    public func statusDelay(retry: Int, retryAfter: Double?) -> Double {
        if let retryAfter, retryAfter >= 0 { return min(retryAfter, maxStatusDelay) }
        return Backoff(initial: baseDelay, cap: maxStatusDelay).nominal(afterFailures: retry + 1)
    }

    /// The wait before network retry number `retry` since bytes last moved.
    public func networkDelay(retry: Int) -> Double {
        Backoff(initial: baseDelay, cap: maxNetworkDelay).nominal(afterFailures: retry + 1)
    }
}
