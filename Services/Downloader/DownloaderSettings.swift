import Logging
import ServiceKit
import Wire

/// The `downloader` section of the config file (docs/configuration.md). Out-of-range values are
/// logged and replaced by the default, so a typo never stops offline content from arriving.
struct DownloaderSettings: Sendable {
    /// Files downloaded at once (VOC/PCD "maxParallel"; a policy setting).
    var maxParallel = 3
    /// How often stations already held are re-synced (Feed.fm: only the changes are fetched).
    var resyncIntervalSeconds: Double = 6 * 3600
    /// How often offlined products past `offlineRevalidateAt` are re-validated (TIDAL: 6 h).
    var revalidateIntervalSeconds: Double = 6 * 3600
    /// Failed attempts (checksum mismatch, body too long, refused by the origin) before a file's
    /// owners are Failed and its partial content removed.
    var maxAttempts = 3
    /// A download that receives no byte for this long (the wait for the answer's headers
    /// included) gives up its slot, whether or not other files wait: a hung connection. Its
    /// items wait `idle` (`NetworkError`, reason `Stalled: …`) and it is tried again later from
    /// the bytes on disk, behind the files that did not stall (`SlotWatch`).
    var stallTimeoutSeconds: Double = 10
    /// Re-queue a verified file found missing or of the wrong size at start.
    var requeueMissing = true
    /// The content catalog's mirror and prepositioning (`downloader.catalog`).
    var catalog = CatalogSettings()
    /// A `SilenceForecast` event and journal warning when the offline forecast's `silentAt` is
    /// nearer than this (`SilenceWatch`); 0 turns the warning off.
    var forecastWarnHours: Double = 72

    init() {}

    // MARK: A slow transfer among others (`SlotWatch`; docs/configuration.md, "Slow transfers")

    /// How long a transfer's rate is measured before it may be judged slow, and the window it
    /// is measured over: a transfer is never given up on for a moment's dip.
    static let slowTransferWindowSeconds: Double = 15
    /// A transfer whose rate over the window is below 1/this of the other running transfers'
    /// (bytes per slot and second over the same window) gives up its slot while other files
    /// wait: the link is not what is slow, the server of this file is. Relative, so that on a
    /// slow cellular link, where every transfer is slow alike, none is given up on.
    static let slowTransferRatio: Double = 20
    /// A transfer below this rate (4 kbit/s) over the window gives up its slot, whether or not
    /// other files wait: a connection all but hung (a trickle from a broken edge), which a new
    /// one may cure. Far below what a slow cellular link still gives one file.
    static let slowTransferFloorBytesPerSecond: Double = 512

    static let keys: Set<String> = [
        "maxParallel", "resyncIntervalSeconds", "revalidateIntervalSeconds", "maxAttempts",
        "stallTimeoutSeconds", "requeueMissing", "catalog", "forecastWarnHours",
    ]

    init(section: [String: JSONValue]?, logger: Logger) {
        guard let section else { return }
        func number(_ key: String, _ range: ClosedRange<Double>) -> Double? {
            guard let value = section[key] else { return nil }
            guard let n = value.doubleValue, range.contains(n) else {
                logger.warning("config downloader.\(key) must be a number in \(range.lowerBound)…\(range.upperBound); using the default")
                return nil
            }
            return n
        }
        if let n = number("maxParallel", 1...32) { maxParallel = Int(n) }
        if let n = number("resyncIntervalSeconds", 60...(30 * 86400)) { resyncIntervalSeconds = n }
        // Down to one second so a test can watch the policy hold rounds back; devices keep hours.
        if let n = number("revalidateIntervalSeconds", 1...(30 * 86400)) { revalidateIntervalSeconds = n }
        if let n = number("maxAttempts", 1...100) { maxAttempts = Int(n) }
        if let n = number("stallTimeoutSeconds", 1...600) { stallTimeoutSeconds = n }
        if let n = number("forecastWarnHours", 0...8760) { forecastWarnHours = n }
        if let value = section["catalog"] { catalog = CatalogSettings(value, logger: logger) }
        if let value = section["requeueMissing"] {
            if let b = value.boolValue { requeueMissing = b } else { logger.warning("config downloader.requeueMissing must be true or false") }
        }
    }
}

/// `downloader.catalog`: how often the content catalog is fetched and how much the downloader
/// prepositions by itself.
struct CatalogSettings: Sendable {
    /// The mirror is refreshed at start and then this often (besides `catalog.refresh`).
    var refreshSeconds: Double = 3600
    /// Bytes of prepositioned content at most; 0 turns prepositioning off.
    var maxAutoBytes: Int64 = 2_000_000_000
    /// Viewed, unsaved prepositioned items older than this give way first when room is short.
    var keepViewedDays: Double = 7
    /// Partial prepositioning: an HLS item queued automatically is downloaded only as far as the
    /// segments covering its first this many seconds (the rest is streamed); 0 downloads it whole.
    var prepositionSeconds: Double = 0

    init() {}

    static let keys: Set<String> = ["refreshSeconds", "maxAutoBytes", "keepViewedDays", "prepositionSeconds"]

    init(_ value: JSONValue, logger: Logger) {
        guard let section = value.objectValue else {
            logger.warning("config downloader.catalog must be an object; using the defaults")
            return
        }
        for key in section.keys where !Self.keys.contains(key) {
            logger.warning("config downloader.catalog.\(key) is not a key Cassette reads")
        }
        func number(_ key: String, _ range: ClosedRange<Double>) -> Double? {
            guard let value = section[key] else { return nil }
            guard let n = value.doubleValue, range.contains(n) else {
                logger.warning("config downloader.catalog.\(key) must be a number in \(range.lowerBound)…\(range.upperBound); using the default")
                return nil
            }
            return n
        }
        // Down to one second so that a test can watch refreshes; devices keep an hour or more.
        if let n = number("refreshSeconds", 1...(30 * 86400)) { refreshSeconds = n }
        if let n = number("maxAutoBytes", 0...1e15) { maxAutoBytes = Int64(n) }
        if let n = number("keepViewedDays", 0...3650) { keepViewedDays = n }
        if let n = number("prepositionSeconds", 0...86400) { prepositionSeconds = n }
    }
}
