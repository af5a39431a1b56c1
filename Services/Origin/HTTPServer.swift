import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// The listening socket: accepts loopback connections and hands each to an `HTTPConnection`.
///
/// Built on `NIOAsyncChannel` so a request is handled as straight-line async code — the
/// fault injector needs to sleep, throttle, cut a body short or drop a connection in the
/// middle of a response, which reads far more plainly than as channel-handler callbacks.
struct HTTPServer {
    let host: String
    let port: Int
    let origin: Origin

    /// Binds, then calls `onListening` with the chosen port, then serves until cancelled.
    func run(onListening: @Sendable (Int) throws -> Void) async throws {
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
        }
    }
}
