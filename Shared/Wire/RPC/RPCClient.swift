import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Transport failures seen by a client, as opposed to errors the service answered with
/// (those are thrown as `RPCError`).
public struct RPCClientError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        case connectFailed = "ConnectFailed", connectionClosed = "ConnectionClosed", timeout = "Timeout", badResponse = "BadResponse"
    }
    public var code: Code
    public var message: String
    public var description: String { "\(code.rawValue): \(message)" }
}

/// A JSON-RPC client over one Unix socket connection: pipelined calls matched by id, and
/// the connection's event notifications as an `AsyncStream`.
public final class RPCClient: Sendable {
    private let channel: Channel
    private let state: NIOLockedValueBox<ClientState>
    /// Notifications (`method: "event"`) received on this connection, in arrival order.
    public let events: AsyncStream<RPCEvent>

    struct ClientState {
        var nextID: Int64 = 0
        var pending: [RPCID: CheckedContinuation<JSONValue, Error>] = [:]
        var closed = false
    }

    private init(channel: Channel, state: NIOLockedValueBox<ClientState>, events: AsyncStream<RPCEvent>) {
        self.channel = channel
        self.state = state
        self.events = events
    }

    /// Connects to a service socket, e.g. `$CASSETTE_RUNTIME_DIR/player.sock`.
    public static func connect(
        path: String, maxFrameBytes: Int = WireLimits().maxFrameBytes,
        group: EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> RPCClient {
        let state = NIOLockedValueBox(ClientState())
        let (events, eventSink) = AsyncStream.makeStream(of: RPCEvent.self, bufferingPolicy: .bufferingNewest(100_000))
        let bootstrap = ClientBootstrap(group: group).channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandlers([
                    FrameDecoder(maxFrameBytes: maxFrameBytes, idleTimeout: nil),
                    ClientHandler(state: state, events: eventSink),
                ])
            }
        }
        do {
            let channel = try await bootstrap.connect(unixDomainSocketPath: path).get()
            return RPCClient(channel: channel, state: state, events: events)
        } catch {
            throw RPCClientError(code: .connectFailed, message: "Cannot connect to \(path): \(error)")
        }
    }

    /// Calls a method and returns its `result`. Throws `RPCError` when the service answered
    /// with an error, `RPCClientError` when the connection failed or `timeout` passed.
    public func call(_ method: String, _ params: JSONValue = .object([:]), timeout: TimeAmount? = nil) async throws -> JSONValue {
        let id = state.withLockedValue { s -> RPCID in
            s.nextID += 1
            return .number(s.nextID)
        }
        let request = RPCRequest(id: id, method: method, params: params)
        let timer = timeout.map { amount in
            channel.eventLoop.scheduleTask(in: amount) { [state] in
                let c = state.withLockedValue { $0.pending.removeValue(forKey: id) }
                c?.resume(throwing: RPCClientError(code: .timeout, message: "No answer to '\(method)' within \(amount)."))
            }
        }
        defer { timer?.cancel() }
        return try await withCheckedThrowingContinuation { continuation in
            let closed = state.withLockedValue { s -> Bool in
                if s.closed { return true }
                s.pending[id] = continuation
                return false
            }
            if closed {
                continuation.resume(throwing: RPCClientError(code: .connectionClosed, message: "The connection is closed."))
                return
            }
            send(request.json)
        }
    }

    /// Sends a notification (no id, no answer).
    public func notify(_ method: String, _ params: JSONValue = .object([:])) {
        send(RPCRequest(id: nil, method: method, params: params).json)
    }

    private func send(_ value: JSONValue) {
        channel.writeAndFlush(OutboundFrame.buffer(value, allocator: channel.allocator), promise: nil)
    }

    public func close() async {
        try? await channel.close()
    }

    /// Completes when the server closes the connection.
    public var closeFuture: EventLoopFuture<Void> { channel.closeFuture }
}

private final class ClientHandler: ChannelInboundHandler {
    typealias InboundIn = InboundFrame

    private let state: NIOLockedValueBox<RPCClient.ClientState>
    private let events: AsyncStream<RPCEvent>.Continuation

    init(state: NIOLockedValueBox<RPCClient.ClientState>, events: AsyncStream<RPCEvent>.Continuation) {
        self.state = state
        self.events = events
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .frame(let buffer) = unwrapInboundIn(data),
            let value = try? FramePayload.json(buffer)
        else {
            context.close(promise: nil)
            return
        }
        if let event = RPCEvent(json: value) {
            events.yield(event)
            return
        }
        // A response with `id: null` is a protocol error about the connection itself: it
        // belongs to no call, and the server closes right after, failing every pending call.
        guard let rawID = value["id"], let id = RPCID(rawID) else { return }
        guard let continuation = state.withLockedValue({ $0.pending.removeValue(forKey: id) }) else { return }
        if let error = value["error"] {
            continuation.resume(throwing: RPCError(json: error) ?? RPCError.internalError("Malformed error: \(error)"))
        } else {
            continuation.resume(returning: value["result"] ?? .null)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        let pending = state.withLockedValue { s -> [CheckedContinuation<JSONValue, Error>] in
            s.closed = true
            defer { s.pending = [:] }
            return Array(s.pending.values)
        }
        for c in pending {
            c.resume(throwing: RPCClientError(code: .connectionClosed, message: "The service closed the connection before answering."))
        }
        events.finish()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }
}
