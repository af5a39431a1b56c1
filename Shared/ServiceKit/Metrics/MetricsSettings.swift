import Wire

/// `metricsFile` and `metricsIntervalSeconds` of a service's own config section
/// (docs/configuration.md): where to keep an OpenMetrics file for node_exporter's textfile
/// collector, and how often to rewrite it.
public struct MetricsSettings: Sendable, Equatable {
    public static let keys: Set<String> = ["metricsFile", "metricsIntervalSeconds"]
    public static let defaultIntervalSeconds = 60.0

    public var file: String?
    public var intervalSeconds = Self.defaultIntervalSeconds

    public init() {}

    /// A wrong type or range stops the service with `ConfigInvalid`, naming the key.
    public init(section: [String: JSONValue]?, service: String) throws(DaemonError) {
        guard let section else { return }
        if let value = section["metricsFile"], value != .null {
            guard let path = value.stringValue, path.hasPrefix("/"), !path.hasSuffix("/") else {
                throw DaemonError(.configInvalid, "\(service).metricsFile must be an absolute file path.")
            }
            file = path
        }
        if let value = section["metricsIntervalSeconds"], value != .null {
            guard let n = value.doubleValue, n.isFinite, (1...86_400).contains(n) else {
                throw DaemonError(.configInvalid, "\(service).metricsIntervalSeconds must be a number from 1 to 86400.")
            }
            intervalSeconds = n
        }
    }

    /// The section of the config file for `service`.
    static func section(_ config: CassetteConfig, service: String) -> [String: JSONValue]? {
        switch service {
        case "player": config.player
        case "downloader": config.downloader
        case "reporter": config.reporter
        default: nil
        }
    }
}
