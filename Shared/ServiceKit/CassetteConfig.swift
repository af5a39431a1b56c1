import Foundation
import HTTPClient
import Wire

/// The JSON config file (docs/configuration.md). Every field is optional; a missing one
/// takes its default. Credentials live here or in the environment, never on a command line,
/// where `ps` would show them.
public struct CassetteConfig: Codable, Sendable, Equatable {
    public var runtimeDir: String?
    public var stateDir: String?
    public var origin: String?
    public var clientToken: String?
    public var clientSecret: String?
    /// A PEM bundle of CA certificates trusted for the origin instead of the system's store.
    public var originCAFile: String?
    /// `sha256//BASE64` public key pins (`;`-separated) the origin's TLS key must match.
    public var originPinnedPublicKey: String?
    /// The proxy to the origin (`http://`, `https://`, `socks5h://`); without it, the
    /// `https_proxy`/`http_proxy`/`no_proxy` environment variables apply.
    public var originProxy: String?
    public var logLevel: String?
    /// The group a self-bound socket is given (docs/configuration.md, "Who may connect").
    public var socketGroup: String?
    public var wire: WireLimits?
    /// Per-service sections (`"player": {...}`), read by the service that owns them.
    public var player: [String: JSONValue]?
    public var downloader: [String: JSONValue]?
    public var reporter: [String: JSONValue]?

    public init() {}

    public static func load(path: String) throws(DaemonError) -> CassetteConfig {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw DaemonError(.configInvalid, "Cannot read config file \(path).")
        }
        do {
            var config = try JSONDecoder().decode(CassetteConfig.self, from: data)
            config.unknownKeys = Self.unknownKeys(in: data)
            return config
        } catch {
            throw DaemonError(.configInvalid, "Config file \(path) is not valid: \(error)")
        }
    }

    /// Keys the file has that no version of this struct reads: most often a typo
    /// (`"maxFrameByte"`), which would otherwise silently keep the default.
    public internal(set) var unknownKeys: [String] = []

    static func unknownKeys(in data: Data) -> [String] {
        guard let top = (try? JSONCoding.parse([UInt8](data)))?.objectValue else { return [] }
        let known = Set(CodingKeys.allCases.map(\.stringValue))
        var unknown = top.keys.filter { !known.contains($0) }.sorted()
        if let wire = top["wire"]?.objectValue {
            let wireKnown = Set(WireLimits.CodingKeys.allCases.map(\.stringValue))
            unknown += wire.keys.filter { !wireKnown.contains($0) }.sorted().map { "wire.\($0)" }
        }
        return unknown
    }

    /// The keys of the service section `name` (`player`, `downloader`, ...) that `known` does not
    /// list, as `section.key`: the section's service warns about them at start.
    public func unknownKeys(inSection name: String, known: Set<String>) -> [String] {
        let section: [String: JSONValue]? =
            switch name {
            case "player": player
            case "downloader": downloader
            case "reporter": reporter
            default: nil
            }
        return (section ?? [:]).keys.filter { !known.contains($0) }.sorted().map { "\(name).\($0)" }
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case runtimeDir, stateDir, origin, clientToken, clientSecret, originCAFile, originPinnedPublicKey, originProxy,
            logLevel, socketGroup, wire, player, downloader, reporter
    }
}

/// Everything a service needs to know about where and how it runs, resolved once at start.
public struct ServiceSettings: Sendable {
    public var name: String
    public var runtimeDir: String
    public var stateDir: String
    public var socketPath: String
    public var origin: String?
    public var clientToken: String?
    public var clientSecret: String?
    /// How every request to the origin goes: the trusted CAs, the pinned keys, the proxy
    /// (`originCAFile`, `originPinnedPublicKey`, `originProxy`), checked at start.
    public var originTransport: HTTPClient.Transport
    public var logLevel: String
    /// The group a self-bound socket (and a runtime dir the service creates) is given.
    public var socketGroup: SocketGroupChoice
    public var limits: WireLimits
    public var config: CassetteConfig

    public static let defaultRuntimeDir = "/run/cassette"
    public static let defaultStateDir = "/var/lib/cassette"
    public static let defaultConfigPath = "/etc/cassette/cassette.json"

    /// Flag, then environment variable, then config file, then default.
    public static func resolve(
        service: String, options: CommonOptions,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(DaemonError) -> ServiceSettings {
        let configPath = options.config ?? environment["CASSETTE_CONFIG"]
        var config = CassetteConfig()
        if let configPath {
            config = try CassetteConfig.load(path: configPath)
        } else if FileManager.default.fileExists(atPath: defaultConfigPath) {
            config = try CassetteConfig.load(path: defaultConfigPath)
        }
        let runtimeDir = options.runtimeDir ?? environment["CASSETTE_RUNTIME_DIR"] ?? config.runtimeDir ?? defaultRuntimeDir
        let stateDir = options.stateDir ?? environment["CASSETTE_STATE_DIR"] ?? config.stateDir ?? defaultStateDir
        let socketPath = runtimeDir + "/" + service + ".sock"
        // sockaddr_un.sun_path holds 108 bytes including the terminating NUL.
        guard socketPath.utf8.count < 108 else {
            throw DaemonError(.configInvalid, "Socket path \(socketPath) is longer than 107 bytes; use a shorter runtime dir.")
        }
        let limits = config.wire ?? WireLimits()
        try validate(limits)
        let transport = HTTPClient.Transport(
            caFile: config.originCAFile, pinnedPublicKey: config.originPinnedPublicKey,
            proxy: config.originProxy)
        try validate(transport)
        return ServiceSettings(
            name: service, runtimeDir: runtimeDir, stateDir: stateDir, socketPath: socketPath,
            origin: options.origin ?? environment["CASSETTE_ORIGIN"] ?? config.origin,
            clientToken: environment["CASSETTE_CLIENT_TOKEN"] ?? config.clientToken,
            clientSecret: environment["CASSETTE_CLIENT_SECRET"] ?? config.clientSecret,
            originTransport: transport,
            logLevel: options.logLevel ?? environment["CASSETTE_LOG_LEVEL"] ?? config.logLevel ?? "info",
            socketGroup: SocketGroupChoice(setting: options.socketGroup ?? environment["CASSETTE_SOCKET_GROUP"] ?? config.socketGroup),
            limits: limits, config: config)
    }

    /// Limits that would make a service useless (never read a request, refuse every frame)
    /// are configuration mistakes, reported at start rather than discovered in production.
    static func validate(_ limits: WireLimits) throws(DaemonError) {
        var problems: [String] = []
        if limits.maxFrameBytes < 1024 { problems.append("wire.maxFrameBytes must be at least 1024") }
        if limits.maxFrameBytes > Int(UInt32.max) { problems.append("wire.maxFrameBytes must fit in 32 bits") }
        if limits.idleTimeoutSeconds < 0 { problems.append("wire.idleTimeoutSeconds must be 0 (off) or more") }
        if limits.eventBacklog < 1 { problems.append("wire.eventBacklog must be at least 1") }
        if limits.maxInFlightPerConnection < 1 { problems.append("wire.maxInFlightPerConnection must be at least 1") }
        guard problems.isEmpty else { throw DaemonError(.configInvalid, problems.joined(separator: "; ") + ".") }
    }

    /// A CA file that is not there, a pin curl would not parse or a proxy URL it could not use
    /// would fail every request to the origin: reported at start, naming the config key.
    static func validate(_ transport: HTTPClient.Transport) throws(DaemonError) {
        let problems = transport.problems().map { problem -> String in
            let key =
                switch problem.field {
                case .caFile: "originCAFile"
                case .pinnedPublicKey: "originPinnedPublicKey"
                case .proxy: "originProxy"
                }
            return "\(key): \(problem.message)"
        }
        guard problems.isEmpty else { throw DaemonError(.configInvalid, problems.joined(separator: "; ") + ".") }
    }
}
