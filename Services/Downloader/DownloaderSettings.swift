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
    /// A download that receives nothing for this long is retried from the bytes on disk.
    var stallTimeoutSeconds: Double = 30
    /// Re-queue a verified file found missing or of the wrong size at start.
    var requeueMissing = true

    init() {}

    static let keys: Set<String> = ["maxParallel", "resyncIntervalSeconds", "revalidateIntervalSeconds", "maxAttempts",
                                    "stallTimeoutSeconds", "requeueMissing"]

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
        if let value = section["requeueMissing"] {
            if let b = value.boolValue { requeueMissing = b } else { logger.warning("config downloader.requeueMissing must be true or false") }
        }
    }
}
