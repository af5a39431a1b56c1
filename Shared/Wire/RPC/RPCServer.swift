import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Where the server's listening socket comes from.
public enum ListenerSource: Sendable, Equatable {
    /// A socket systemd (or a test supervisor) already bound and listens on. The server
    /// serves it and never binds, chmods or unlinks its path.
    case inherited(fd: Int32, path: String?)
    /// The server binds this path itself, mode 0660.
    case path(String)
}

extension ListenerSource: CustomStringConvertible {
    /// The socket's path as an operator reads it in a log line.
    public var description: String {
        switch self {
        case .path(let path): path
        case .inherited(let fd, let path?): "\(path) (fd \(fd), inherited from systemd)"
        case .inherited(let fd, nil): "fd \(fd), inherited from systemd"
        }
    }
}

/// A JSON-RPC server on a Unix stream socket, framed per docs/protocol.md.
///
/// Lifecycle: `start` → serving → `shutdownGracefully` (stop accepting, let in-flight
/// requests finish, close connections). Subscriptions and the built-in `events.*` methods
/// live here because they are per-connection.
public final class RPCServer: Sendable {
    public let hub: EventHub
    private let router: RPCRouter
    private let limits: WireLimits
    private let logger: Logger
    private let group: EventLoopGroup
    private let tracker = RequestTracker()
    private let state = NIOLockedValueBox<(channel: Channel?, connections: [UInt64: Channel], nextID: UInt64)>((nil, [:], 0))

    public init(
        router: RPCRouter, limits: WireLimits, logger: Logger,
        group: EventLoopGroup = MultiThreadedEventLoopGroup.singleton, hub: EventHub? = nil
    ) {
        var router = router
        let hub = hub ?? EventHub(backlog: limits.eventBacklog)
        Self.registerEventMethods(&router, hub: hub)
        self.router = router
        self.hub = hub
        self.limits = limits
        self.logger = logger
        self.group = group
    }

    /// Binds or adopts the listening socket and begins accepting. Returns once it listens,
    /// which is when a service may tell systemd READY=1.
    public func start(_ source: ListenerSource) async throws {
        let (acceptLoop, connectionLoops) = Self.split(group)
        let bootstrap = ServerBootstrap(group: acceptLoop, childGroup: connectionLoops)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers(
                        AcceptThrottle.handlers(logger: self.logger, connectionCount: { self.connectionCount }))
                }
            }
            .childChannelInitializer { [self] channel in
                let id = self.state.withLockedValue { s -> UInt64 in
                    s.nextID += 1
                    s.connections[s.nextID] = channel
                    return s.nextID
                }
                channel.closeFuture.whenComplete { _ in
                    _ = self.state.withLockedValue { $0.connections.removeValue(forKey: id) }
                }
                return channel.eventLoop.makeCompletedFuture {
                    let idle: TimeAmount? =
                        self.limits.idleTimeoutSeconds > 0
                        ? .milliseconds(Int64(self.limits.idleTimeoutSeconds * 1000)) : nil
                    try channel.pipeline.syncOperations.addHandler(
                        RPCServerHandler(
                            router: self.router, hub: self.hub, tracker: self.tracker, logger: self.logger,
                            maxInFlight: self.limits.maxInFlightPerConnection, maxFrameBytes: self.limits.maxFrameBytes,
                            idleTimeout: idle, connectionID: id))
                }
            }
        let channel: Channel
        switch source {
        case .inherited(let fd, _):
            channel = try await bootstrap.withBoundSocket(fd).get()
        case .path(let path):
            channel = try await bootstrap.bind(unixDomainSocketPath: path).get()
        }
        state.withLockedValue { $0.channel = channel }
    }

    /// The loop that accepts, and the loops that carry the connections. With exactly two loops
    /// (the daemons' setting) the first only accepts and the second carries every connection:
    /// requests run on their connection's loop, and a new connection must not wait behind them
    /// to be accepted. Otherwise the group does both.
    static func split(_ group: EventLoopGroup) -> (accept: EventLoopGroup, connections: EventLoopGroup) {
        let loops = Array(group.makeIterator())
        guard loops.count == 2 else { return (group, group) }
        return (loops[0], loops[1])
    }

    /// Stops accepting, waits up to `timeout` for in-flight requests, then cancels those still
    /// running and waits up to `cancelGrace` for their answers (`ShuttingDown` unless they
    /// finished anyway), then closes every connection. Does not unlink the socket path; the
    /// caller owns that decision.
    public func shutdownGracefully(timeout: TimeAmount = .seconds(10), cancelGrace: TimeAmount = .seconds(1)) async {
        let listener = state.withLockedValue { s -> Channel? in
            defer { s.channel = nil }
            return s.channel
        }
        try? await listener?.close()
        if await !drain(within: timeout) {
            logger.notice("stopping: cancelling requests still in flight", metadata: ["inFlight": "\(tracker.count)"])
            tracker.cancelAll()
            _ = await drain(within: cancelGrace)
        }
        let open = state.withLockedValue { Array($0.connections.values) }
        for channel in open { try? await channel.close() }
    }

    /// Waits until no request is in flight, at most `timeout`; true when none is.
    private func drain(within timeout: TimeAmount) async -> Bool {
        let tracker = self.tracker
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await tracker.drained() }
            group.addTask { try? await Task.sleep(nanoseconds: UInt64(max(0, timeout.nanoseconds))) }
            await group.next()
            group.cancelAll()
        }
        return tracker.count == 0
    }

    /// Requests being handled right now, across all connections.
    public var inFlightRequests: Int { tracker.count }

    public var connectionCount: Int { state.withLockedValue { $0.connections.count } }

    private struct TopicsParams: Decodable, Sendable {
        var topics: [String]?
    }

    private static func registerEventMethods(_ router: inout RPCRouter, hub: EventHub) {
        @Sendable func topics(_ p: TopicsParams) throws(RPCError) -> Set<String> {
            let requested = Set(p.topics ?? [])
            let unknown = requested.subtracting(EventTopic.all)
            guard unknown.isEmpty else {
                throw .invalidParams("Unknown topic(s) \(unknown.sorted()); known: \(EventTopic.all.sorted()).")
            }
            return requested
        }
        router.register("events.subscribe", takes: ["topics"]) { ctx in
            let wanted = try topics(try ctx.params(TopicsParams.self))
            hub.subscribe(ctx.connection, topics: wanted)
            return [
                "topics": .array(hub.topics(of: ctx.connection).sorted().map { .string($0) }),
                "seq": .number(Double(hub.lastSeq)),
            ]
        }
        router.register("events.unsubscribe", takes: ["topics"]) { ctx in
            let unwanted = try topics(try ctx.params(TopicsParams.self))
            hub.unsubscribe(ctx.connection, topics: unwanted)
            return ["topics": .array(hub.topics(of: ctx.connection).sorted().map { .string($0) })]
        }
    }
}
