import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle

/// The listening socket as a service: accepts loopback connections and hands each to an
/// `HTTPConnection`, until the service group shuts down gracefully.
///
/// Built on `NIOAsyncChannel` so a request is handled as straight-line async code — the
/// fault injector needs to sleep, throttle, cut a body short or drop a connection in the
/// middle of a response, which reads far more plainly than as channel-handler callbacks.
///
/// Shutdown does not drain: graceful shutdown closes the listener and then every open
/// connection, idle or not. Every answered request is already durable (play logs are
/// fsynced before the answer), and a client cut off mid-answer retries an idempotent call;
/// waiting instead would let an idle keep-alive connection hold the process forever.
struct HTTPServer: Service {
    let host: String
    let port: Int
    let origin: Origin
    /// Called once with the bound port, before the first connection is accepted. It runs
    /// inside the service group, so by then SIGTERM and SIGINT already mean "shut down".
    let onListening: @Sendable (Int) throws -> Void

    /// Binds, reports the port, then serves until graceful shutdown; throws when the address
    /// cannot be bound or `onListening` throws.
    func run() async throws {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: OriginLimits.listenBacklog)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.maxMessagesPerRead, value: 1)
            .bind(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    return try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(
                        wrappingChannelSynchronously: channel)
                }
            }
        // A shutdown that began before this point calls the handler at once.
        try await withGracefulShutdownHandler {
            guard let boundPort = server.channel.localAddress?.port else {
                throw OriginError(description: "listening socket has no port")
            }
            try onListening(boundPort)
            try await withThrowingDiscardingTaskGroup { group in
                try await server.executeThenClose { connections in
                    for try await connection in connections {
                        group.addTask {
                            await HTTPConnection(channel: connection, origin: origin).serve()
                        }
                    }
                }
                // The listener is closed: end the connections still open (see above).
                group.cancelAll()
            }
        } onGracefulShutdown: {
            server.channel.close(promise: nil)
        }
    }
}
