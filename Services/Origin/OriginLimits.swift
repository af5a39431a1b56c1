/// Every limit and default of the origin in one place, so tests and docs can name them.
enum OriginLimits {
    /// Request bodies above this are answered with 413 and the connection is closed.
    static let maxRequestBodyBytes = 16 * 1024 * 1024
    /// The most play events or consumption records one request may carry (docs/origin.md).
    static let maxEventsPerRequest = 500
    /// File bodies are streamed in chunks of this size, so a large media file never sits in memory.
    static let fileChunkBytes = 64 * 1024
    /// Throttled bodies are written in slices this many times per second.
    static let throttleSlicesPerSecond = 20
    /// A `delayMs` fault never waits longer than this, so a typo cannot hang a test run.
    static let maxFaultDelayMs = 120_000
    /// Default credentials when `CASSETTE_CLIENT_TOKEN` / `CASSETTE_CLIENT_SECRET` are unset.
    static let defaultClientToken = "demo"
    static let defaultClientSecret = "demo"
    /// Connections waiting to be accepted.
    static let listenBacklog: Int32 = 256
    /// Rental length when a license request does not name one: 30 days, as docs/origin.md says.
    static let defaultRentalSeconds = 2_592_000
    /// The most items one `POST /v1/stations/{id}/play` may ask for.
    static let maxStationPlayCount = 50
    /// Seconds between streaming-session heartbeats unless `serve --heartbeat-seconds` says otherwise.
    static let defaultHeartbeatSeconds = 30
}
