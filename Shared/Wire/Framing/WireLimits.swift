/// Every limit the wire layer enforces, named once with its default (docs/protocol.md).
public struct WireLimits: Sendable, Codable, Equatable {
    /// Largest frame payload accepted or sent, in bytes. A longer frame is a protocol error.
    public var maxFrameBytes: Int = 1_048_576
    /// How long a connection may sit on a partial frame before it is closed.
    public var idleTimeoutSeconds: Double = 30
    /// Events queued for one subscriber that has not read them; past this it gets
    /// `Overflow` and is disconnected, so a stuck client cannot grow the service's memory.
    public var eventBacklog: Int = 1024
    /// Requests one connection may have in flight; past this the server stops reading
    /// from it until answers drain (backpressure instead of unbounded buffering).
    public var maxInFlightPerConnection: Int = 256

    public init() {}

    public init(
        maxFrameBytes: Int = 1_048_576, idleTimeoutSeconds: Double = 30, eventBacklog: Int = 1024,
        maxInFlightPerConnection: Int = 256
    ) {
        self.maxFrameBytes = maxFrameBytes
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.eventBacklog = eventBacklog
        self.maxInFlightPerConnection = maxInFlightPerConnection
    }

    /// Public so a config loader can tell a misspelt limit from a known one.
    public enum CodingKeys: String, CodingKey, CaseIterable {
        case maxFrameBytes, idleTimeoutSeconds, eventBacklog, maxInFlightPerConnection
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = WireLimits()
        maxFrameBytes = try c.decodeIfPresent(Int.self, forKey: .maxFrameBytes) ?? d.maxFrameBytes
        idleTimeoutSeconds = try c.decodeIfPresent(Double.self, forKey: .idleTimeoutSeconds) ?? d.idleTimeoutSeconds
        eventBacklog = try c.decodeIfPresent(Int.self, forKey: .eventBacklog) ?? d.eventBacklog
        maxInFlightPerConnection = try c.decodeIfPresent(Int.self, forKey: .maxInFlightPerConnection) ?? d.maxInFlightPerConnection
    }
}
