import Logging

/// The journal catalog ids (`MESSAGE_ID=`) of the log entries an operator filters on, e.g.
/// `journalctl MESSAGE_ID=fbb926d8a2714a93b95d5bfc68ade9ec` for every completed sync. The ids are
/// stable: a new kind of entry gets a new id, an existing one never changes.
public enum LogMessageID: String, Sendable, CaseIterable {
    /// A service listens on its socket and answers.
    case listening = "291f9ab8ec9c4d8d9e3a34b032787aa3"
    /// A service stopped cleanly.
    case stopped = "fb0e2cbc541141b8a264d62482b9535b"
    /// A service cannot run (bad config, socket or catalog unavailable).
    case cannotRun = "a855e1ced2d84e1994290081f4197fbf"
    /// A station or product sync finished.
    case syncCompleted = "fbb926d8a2714a93b95d5bfc68ade9ec"
    /// A downloaded item is complete and verified.
    case itemCompleted = "b99d1d14e4af4b02be8cbbce4501bd9c"
    /// An item failed for good (after its last attempt).
    case itemFailed = "6f9a74a8edb3440ca15f0103e7a3648e"
    /// The network the downloader sees changed.
    case networkChanged = "483d0e9f0432499892c7acd680d822a4"
    /// The download policy changed.
    case policyChanged = "e381eba38140482a962302a7d8ec6e18"
    /// The offline forecast says the box falls silent within `downloader.forecastWarnHours`.
    case silenceForecast = "f2cd5f32a2884cbbab63c4d72e7a0f18"
    /// The reporter delivered plays to the origin.
    case playsDelivered = "d5fff399fa874eb0ba1095b190d8e228"
    /// Delivery to the origin fails and is retried.
    case deliveryFailing = "54049f7065b24dc0be0103bf97d00b50"

    /// The metadata key the journal handler turns into `MESSAGE_ID=`.
    public static let metadataKey = "messageID"

    /// This id as log metadata: `logger.info("...", metadata: LogMessageID.stopped.metadata)`.
    public var metadata: Logger.Metadata { [Self.metadataKey: .string(rawValue)] }

    /// This id merged with other metadata.
    public func metadata(_ more: Logger.Metadata) -> Logger.Metadata {
        more.merging(metadata) { _, id in id }
    }
}
