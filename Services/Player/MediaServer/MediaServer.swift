import Glibc
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle

/// The local media server's controls (VOC `startHLSServer`): `media.server.start|stop|status`
/// ask, `MediaServerService` — a member of the player's `ServiceGroup` — binds, serves and
/// stops. Loopback only (`127.0.0.1`); the port comes from `player.mediaServerPort` (0: any free).
final class MediaServerControl: Sendable {
    enum Command: Sendable {
        case start(CheckedContinuation<Int, Error>)
        case stop(CheckedContinuation<Void, Never>)
    }

    let port: Int
    private let stream: AsyncStream<Command>
    private let continuation: AsyncStream<Command>.Continuation
    /// The port while running; nil while stopped.
    private let running = NIOLockedValueBox<Int?>(nil)

    init(port: Int) {
        self.port = port
        (stream, continuation) = AsyncStream.makeStream(of: Command.self)
    }

    var commands: AsyncStream<Command> { stream }

    /// The server's base URL, once started.
    var url: String? { running.withLockedValue { $0 }.map { "http://127.0.0.1:\($0)" } }

    func noteRunning(_ port: Int?) { running.withLockedValue { $0 = port } }

    /// Starts the server (or finds it running) and returns its port. Throws `PlayerError`
    /// `MediaServerFailed` when the port cannot be bound or the player is stopping.
    func start() async throws -> Int {
        try await withCheckedThrowingContinuation { reply in
            if case .terminated = continuation.yield(.start(reply)) {
                reply.resume(throwing: PlayerError(.mediaServerFailed, "the player is stopping"))
            }
        }
    }

    func stop() async {
        await withCheckedContinuation { reply in
            if case .terminated = continuation.yield(.stop(reply)) { reply.resume() }
        }
    }

    /// No command is taken any more (graceful shutdown).
    func finish() { continuation.finish() }
}

/// Binds and serves on command, for the life of the player. Every connection is one task of
/// its group; stopping closes the listener and every open connection.
struct MediaServerService: Service {
    typealias Connection = NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>

    /// A connection and its handler answering from what is kept (which also holds its cut).
    struct Served: Sendable {
        let connection: Connection
        let kept: NIOLoopBound<KeptAnswerHandler>
    }

    let control: MediaServerControl
    let responder: MediaResponder
    let logger: Logger
    /// Connections served at once; more wait in the listen backlog.
    static let maxConnections = 64
    /// The most bytes of an answer the kernel holds unsent for a connection (`TCP_NOTSENT_LOWAT`).
    static let unsentBytes: SocketOptionValue = 128 << 10

    func run() async throws {
        let open = NIOLockedValueBox<[ObjectIdentifier: Channel]>([:])
        var listener: Channel?
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                for await command in control.commands {
                    switch command {
                    case .start(let reply):
                        if let listener, let port = listener.localAddress?.port {
                            reply.resume(returning: port)
                            continue
                        }
                        do {
                            let server = try await bind()
                            let port = server.channel.localAddress?.port ?? 0
                            listener = server.channel
                            control.noteRunning(port)
                            logger.info("media server listening", metadata: ["url": "http://127.0.0.1:\(port)"])
                            group.addTask { await serve(server, open: open) }
                            reply.resume(returning: port)
                        } catch {
                            reply.resume(throwing: PlayerError(.mediaServerFailed, "cannot listen on 127.0.0.1:\(control.port): \(error)"))
                        }
                    case .stop(let reply):
                        await close(&listener, open: open)
                        reply.resume()
                    }
                }
                await close(&listener, open: open)
            }
        } onGracefulShutdown: {
            control.finish()
        }
    }

    private func close(_ listener: inout Channel?, open: NIOLockedValueBox<[ObjectIdentifier: Channel]>) async {
        guard let channel = listener else { return }
        listener = nil
        control.noteRunning(nil)
        try? await channel.close()
        for connection in open.withLockedValue({ Array($0.values) }) { connection.close(promise: nil) }
        logger.info("media server stopped")
    }

    private func bind() async throws -> NIOAsyncChannel<Served, Never> {
        try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            // Little unsent data queued in the kernel per connection: a slow client's answer
            // stays mostly in the file, so a cut at a license's end (`reset`) leaves little
            // already on its way (and a slow client holds little kernel memory).
            .childChannelOption(.tcpOption(.init(rawValue: TCP_NOTSENT_LOWAT)), value: Self.unsentBytes)
            .bind(host: "127.0.0.1", port: control.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    let kept = KeptAnswerHandler(responder: responder, logger: logger)
                    try channel.pipeline.syncOperations.addHandler(kept)
                    return Served(
                        connection: try Connection(wrappingChannelSynchronously: channel),
                        kept: NIOLoopBound(kept, eventLoop: channel.eventLoop))
                }
            }
    }

    private func serve(_ server: NIOAsyncChannel<Served, Never>, open: NIOLockedValueBox<[ObjectIdentifier: Channel]>) async {
        do {
            try await server.executeThenClose { inbound in
                try await withThrowingDiscardingTaskGroup { connections in
                    for try await served in inbound {
                        let connection = served.connection
                        let id = ObjectIdentifier(connection.channel)
                        let admitted = open.withLockedValue { table -> Bool in
                            guard table.count < Self.maxConnections else { return false }
                            table[id] = connection.channel
                            return true
                        }
                        guard admitted else {
                            connection.channel.close(promise: nil)
                            continue
                        }
                        connections.addTask {
                            defer { _ = open.withLockedValue { $0.removeValue(forKey: id) } }
                            await handle(served)
                        }
                    }
                }
            }
        } catch {
            logger.debug("media server listener ended: \(error)")
        }
    }

    /// Answers the requests `KeptAnswerHandler` passes on, one after the other.
    private func handle(_ served: Served) async {
        let connection = served.connection
        do {
            try await connection.executeThenClose { inbound, outbound in
                var head: HTTPRequestHead?
                for try await part in inbound {
                    switch part {
                    case .head(let request):
                        head = request
                    case .body: continue
                    case .end:
                        guard let request = head else { return }
                        head = nil
                        let response = await responder.respond(to: request)
                        // Whatever of it is still being sent when the product ends is cut then.
                        if let instant = response.cutAt {
                            let kept = served.kept
                            connection.channel.eventLoop.execute { kept.value.arm(at: instant, uri: request.uri) }
                        }
                        try await write(response, for: request, to: outbound)
                        if !request.isKeepAlive {
                            // Closing drops what NIO has not written yet: the output is shut once
                            // all of it is sent (the cut still armed meanwhile), then the connection.
                            try await connection.channel.close(mode: .output).get()
                            return
                        }
                    }
                }
            }
        } catch {
            logger.debug("media server connection ended: \(error)")
        }
    }

    /// The cut at a product's end (`KeptAnswerHandler.arm`), of an answer still being sent:
    /// SO_LINGER 0 drops what NIO and the kernel still hold unsent for the client, and the
    /// client sees the connection reset, not a complete answer.
    static func reset(_ channel: Channel, uri: String, logger: Logger) {
        logger.info("media server: license or offline window ended; connection reset", metadata: ["uri": "\(uri)"])
        let reset =
            (channel as? SocketOptionProvider)?.setSoLinger(linger(l_onoff: 1, l_linger: 0))
            ?? channel.eventLoop.makeSucceededVoidFuture()
        reset.whenComplete { _ in channel.close(promise: nil) }
    }

    private func write(
        _ response: MediaResponse, for request: HTTPRequestHead,
        to outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>
    ) async throws {
        try await outbound.write(.head(response.head(for: request)))
        if request.method != .HEAD {
            switch response.body {
            case .bytes(let bytes):
                if !bytes.isEmpty { try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: bytes)))) }
            case .file(let path, let offset, let length):
                // Blocking reads on NIO's thread pool, one chunk at a time; each write waits
                // until the connection can take more, so a slow player never fills memory.
                var position = offset
                let end = offset + length
                while position < end {
                    let count = Int(min(Int64(MediaResponder.chunkBytes), end - position))
                    let at = position
                    let chunk = try await MediaFiles.read(path, offset: at, count: count)
                    guard !chunk.isEmpty else { throw MediaFiles.ShortRead() }
                    try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: chunk))))
                    position += Int64(chunk.count)
                }
            }
        }
        try await outbound.write(.end(nil))
    }
}
