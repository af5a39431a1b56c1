import Foundation
import Logging
import Wire

/// The download policy (`policy.get`/`policy.set`, persisted in the catalog's settings table).
/// Brightcove: Wi-Fi only by default, cellular switchable at run time, keep 1 GB free;
/// TIDAL: offline over cellular and the offline qualities are user settings.
struct DownloadPolicy: Sendable, Equatable, Codable {
    /// Downloads and re-validation on cellular (and, without `allowMetered`, on metered links).
    var allowCellular = false
    /// A metered Wi-Fi or Ethernet link (a phone hotspot) counts as Wi-Fi rather than cellular.
    var allowMetered = false
    /// All offlined content together stays at or under this; nil: no bound but the disk's.
    var maxCacheBytes: Int64?
    /// Left free on the media directory's file system for other software.
    var minFreeBytes: Int64 = 1 << 30
    /// Files downloaded at once.
    var maxParallel = 3
    /// `quality` sent to the origin for an `offline.add` of audio without its own `quality`.
    var offlineAudioQuality = "HIGH"
    /// The same for video products.
    var offlineVideoQuality = "HIGH"
    /// The app is in offline mode (TIDAL `isOfflineMode`, set through the player's
    /// `player.config.set`): nothing is downloaded and no background traffic goes to the origin.
    var offlineMode = false
    /// When downloads may run, in the device's local time (`DownloadWindows`); empty: always.
    var downloadWindows: [DownloadWindow] = []
    /// All downloads together receive at most this many bytes per second, outside a window's
    /// own limit; nil: no limit.
    var maxBytesPerSecond: Int64?

    static let audioQualities = ["LOW", "HIGH", "LOSSLESS", "HI_RES_LOSSLESS"]
    static let videoQualities = ["AUDIO_ONLY", "LOW", "MEDIUM", "HIGH"]

    /// The quality to ask for when the request names none.
    func offlineQuality(productType: String?) -> String {
        productType?.uppercased() == "VIDEO" ? offlineVideoQuality : offlineAudioQuality
    }

    /// The download windows with the rate limit, as the gate asks them.
    var schedule: DownloadWindows { DownloadWindows(windows: downloadWindows, maxBytesPerSecond: maxBytesPerSecond) }

    var json: JSONValue {
        [
            "allowCellular": .bool(allowCellular), "allowMetered": .bool(allowMetered),
            "maxCacheBytes": maxCacheBytes.map { .number(Double($0)) } ?? .null,
            "minFreeBytes": .number(Double(minFreeBytes)), "maxParallel": .number(Double(maxParallel)),
            "offlineAudioQuality": .string(offlineAudioQuality), "offlineVideoQuality": .string(offlineVideoQuality),
            "offlineMode": .bool(offlineMode), "downloadWindows": .array(downloadWindows.map(\.json)),
            "maxBytesPerSecond": maxBytesPerSecond.map { .number(Double($0)) } ?? .null,
        ]
    }

    static let keys = [
        "allowCellular", "allowMetered", "maxCacheBytes", "minFreeBytes", "maxParallel",
        "offlineAudioQuality", "offlineVideoQuality", "offlineMode", "downloadWindows", "maxBytesPerSecond",
    ]

    /// Applies the keys present in `changes` (a `policy.set` params object). Everything is
    /// checked before anything changes, so a bad call changes nothing; errors name the field.
    func applying(_ changes: [String: JSONValue]) throws(RPCError) -> DownloadPolicy {
        var next = self
        for key in changes.keys.sorted() where !Self.keys.contains(key) {
            throw .invalidParams("params.\(key) is not a policy key; known: \(Self.keys.joined(separator: ", ")).")
        }
        func bool(_ key: String) throws(RPCError) -> Bool? {
            guard let value = changes[key] else { return nil }
            guard let b = value.boolValue else { throw .invalidParams("params.\(key) must be true or false.") }
            return b
        }
        func bytes(_ key: String, nullable: Bool) throws(RPCError) -> Int64?? {
            guard let value = changes[key] else { return nil }
            if value == .null, nullable { return .some(nil) }
            guard let n = value.doubleValue, n >= 0, n <= 9.0e15, n.rounded() == n else {
                throw .invalidParams("params.\(key) must be a whole number of bytes ≥ 0\(nullable ? " or null (no bound)" : "").")
            }
            return .some(Int64(n))
        }
        func quality(_ key: String, _ allowed: [String]) throws(RPCError) -> String? {
            guard let value = changes[key] else { return nil }
            guard let q = value.stringValue, allowed.contains(q) else {
                throw .invalidParams("params.\(key) must be one of \(allowed.joined(separator: ", ")).")
            }
            return q
        }
        if let b = try bool("allowCellular") { next.allowCellular = b }
        if let b = try bool("allowMetered") { next.allowMetered = b }
        if let b = try bool("offlineMode") { next.offlineMode = b }
        if let n = try bytes("maxCacheBytes", nullable: true) { next.maxCacheBytes = n }
        if let n = try bytes("minFreeBytes", nullable: false) { next.minFreeBytes = n ?? 0 }
        if let value = changes["maxParallel"] {
            guard let n = value.intValue, (1...32).contains(n), Double(n) == value.doubleValue else {
                throw .invalidParams("params.maxParallel must be a whole number 1…32.")
            }
            next.maxParallel = n
        }
        if let q = try quality("offlineAudioQuality", Self.audioQualities) { next.offlineAudioQuality = q }
        if let q = try quality("offlineVideoQuality", Self.videoQualities) { next.offlineVideoQuality = q }
        if let value = changes["downloadWindows"] {
            guard let list = value.arrayValue ?? (value == .null ? [] : nil), list.count <= 64 else {
                throw .invalidParams("params.downloadWindows must be a list of at most 64 windows ([] or null: downloads at any time).")
            }
            var windows: [DownloadWindow] = []
            for (i, window) in list.enumerated() {
                windows.append(try DownloadWindow.parse(window, field: "params.downloadWindows[\(i)]"))
            }
            next.downloadWindows = windows
        }
        if let value = changes["maxBytesPerSecond"] {
            next.maxBytesPerSecond = value == .null ? nil : try DownloadWindow.rate(value, field: "params.maxBytesPerSecond")
        }
        return next
    }

    /// The policy's keys in the config file's `downloader` section.
    static let configKeys: Set<String> = [
        "allowCellular", "allowMetered", "maxCacheBytes", "minFreeBytes",
        "offlineAudioQuality", "offlineVideoQuality", "downloadWindows", "maxBytesPerSecond",
    ]

    /// The defaults from the config file's `downloader` section; a bad value is logged and the
    /// default kept (the downloader section never stops the service).
    static func fromConfig(_ section: [String: JSONValue]?, maxParallel: Int, logger: Logger) -> DownloadPolicy {
        var policy = DownloadPolicy()
        policy.maxParallel = maxParallel
        guard let section else { return policy }
        for key in configKeys.sorted() {
            guard let value = section[key] else { continue }
            do {
                policy = try policy.applying([key: value])
            } catch {
                // The field as this file names it.
                let message = error.message.hasPrefix("params.") ? "downloader." + error.message.dropFirst("params.".count) : error.message
                logger.warning("config downloader.\(key): \(message); using the default")
            }
        }
        return policy
    }

    /// What the policy lets run on `network`.
    func verdict(on network: NetworkState) -> NetworkVerdict {
        if offlineMode { return .blocked(.offlineMode, "the app is in offline mode") }
        switch network.type {
        case .none:
            return .blocked(.noNetwork, "there is no network")
        case .cellular:
            return allowCellular ? .allowed : .perItem(.cellularNotAllowed, "the network is cellular and allowCellular is off")
        case .wifi, .ethernet:
            if network.metered, !allowMetered, !allowCellular {
                return .perItem(.meteredNotAllowed, "the \(network.type.rawValue) link is metered and allowMetered is off")
            }
            return .allowed
        }
    }
}

/// Why an item waits (Idle) rather than downloads: the policy (`CellularNotAllowed`,
/// `MeteredNotAllowed`, `NoNetwork`, `CacheLimit`, `OutsideDownloadWindow`) or an origin that does not answer usefully
/// (`NetworkError`: no connection, a timeout, 5xx or 429 after the transfer's retries;
/// `TLSFailed`: its TLS edge was refused, see `OriginError.isTLSFailure`).
enum PolicyBlock: String, Sendable, CaseIterable {
    case cellularNotAllowed = "CellularNotAllowed"
    case meteredNotAllowed = "MeteredNotAllowed"
    case noNetwork = "NoNetwork"
    case cacheLimit = "CacheLimit"
    case networkError = "NetworkError"
    case tlsFailed = "TLSFailed"
    case offlineMode = "OfflineMode"
    /// Every download window is closed (`DownloadWindows`); released when one opens.
    case outsideDownloadWindow = "OutsideDownloadWindow"

    /// The waits the network policy decides, released when the verdict allows them again.
    static let policyNetwork: [PolicyBlock] = [.cellularNotAllowed, .meteredNotAllowed, .noNetwork, .offlineMode]
}

/// The policy's answer for the current network.
enum NetworkVerdict: Sendable, Equatable {
    /// Everything may download.
    case allowed
    /// Only items requested with `allowCellular: true` may.
    case perItem(PolicyBlock, String)
    /// Nothing may.
    case blocked(PolicyBlock, String)

    var name: String {
        switch self {
        case .allowed: return "all"
        case .perItem: return "allowCellularItemsOnly"
        case .blocked: return "none"
        }
    }
}

extension DownloadPolicy {
    private enum CodingKeys: String, CodingKey {
        case allowCellular, allowMetered, maxCacheBytes, minFreeBytes, maxParallel, offlineAudioQuality,
            offlineVideoQuality, offlineMode, downloadWindows, maxBytesPerSecond
    }

    /// A stored policy from before a key existed keeps that key's default (rather than the
    /// whole stored policy being dropped).
    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let defaults = DownloadPolicy()
        allowCellular = try c.decodeIfPresent(Bool.self, forKey: .allowCellular) ?? defaults.allowCellular
        allowMetered = try c.decodeIfPresent(Bool.self, forKey: .allowMetered) ?? defaults.allowMetered
        maxCacheBytes = try c.decodeIfPresent(Int64.self, forKey: .maxCacheBytes)
        minFreeBytes = try c.decodeIfPresent(Int64.self, forKey: .minFreeBytes) ?? defaults.minFreeBytes
        maxParallel = try c.decodeIfPresent(Int.self, forKey: .maxParallel) ?? defaults.maxParallel
        offlineAudioQuality = try c.decodeIfPresent(String.self, forKey: .offlineAudioQuality) ?? defaults.offlineAudioQuality
        offlineVideoQuality = try c.decodeIfPresent(String.self, forKey: .offlineVideoQuality) ?? defaults.offlineVideoQuality
        offlineMode = try c.decodeIfPresent(Bool.self, forKey: .offlineMode) ?? defaults.offlineMode
        downloadWindows = try c.decodeIfPresent([DownloadWindow].self, forKey: .downloadWindows) ?? defaults.downloadWindows
        maxBytesPerSecond = try c.decodeIfPresent(Int64.self, forKey: .maxBytesPerSecond)
    }
}
