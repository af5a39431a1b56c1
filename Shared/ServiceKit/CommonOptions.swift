import ArgumentParser

/// The flags every service takes (docs/configuration.md, "Settings"). Each falls back to its
/// `CASSETTE_*` variable, then to the config file, then to the default.
public struct CommonOptions: ParsableArguments, Sendable {
    @Option(name: .long, help: "Directory holding the service sockets (env CASSETTE_RUNTIME_DIR, default /run/cassette).")
    public var runtimeDir: String?

    @Option(name: .long, help: "Directory holding the catalog and media (env CASSETTE_STATE_DIR, default /var/lib/cassette).")
    public var stateDir: String?

    @Option(name: .long, help: "JSON config file (env CASSETTE_CONFIG, default /etc/cassette/cassette.json if present).")
    public var config: String?

    @Option(name: .long, help: "Base URL of the content origin (env CASSETTE_ORIGIN).")
    public var origin: String?

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical (env CASSETTE_LOG_LEVEL).")
    public var logLevel: String?

    @Option(
        name: .long,
        help:
            "Group of a self-bound socket: who may connect (env CASSETTE_SOCKET_GROUP; default cassette-clients when that group exists; \"\" keeps the service's own group)."
    )
    public var socketGroup: String?

    public init() {}
}
