import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Per-connection JSON-RPC handling: framing, envelope checks, dispatch, pipelining, backpressure.
///
/// The connection's only handler: it splits the byte stream into frames itself (`FrameReader`)
/// rather than behind a decoder of its own in the pipeline, so that it sees where each chunk
/// read from the socket ends: the answers it finds on the spot for the frames of one chunk
/// go out with one flush at the chunk's end. A client that pipelines gets them in one write
/// instead of one system call per answer, and the answer to a lone request leaves before the
/// loop tries the socket again (flushing in `channelReadComplete` would wait for that read).
///
/// Requests on one connection run concurrently (a client may pipeline); each answer is
/// written when ready, carrying its request's id; one that a task finishes later is flushed
/// at once. Past `maxInFlight` unanswered requests, or while answers pile up unread (the
/// channel is not writable), the handler stops reading from the socket, so a client that
/// sends without reading cannot grow the service's memory.
final class RPCServerHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let router: RPCRouter
    private let hub: EventHub
    private let tracker: RequestTracker
    private let logger: Logger
    private let maxInFlight: Int
    private let connectionID: UInt64
    private var frames: FrameReader
    private var connection: RPCConnection?
    /// The connection's loop as the preferred executor of its requests' tasks.
    private var executor: EventLoopTaskExecutor?
    private var allocator = ByteBufferAllocator()
    /// Each answer's JSON is written here, then copied into its frame's buffer: one array's
    /// memory for every answer of the connection, instead of one allocation per answer.
    private var scratch: [UInt8] = []
    private var inFlight = 0
    private var readPending = false
    private var closing = false
    /// Answers written for the frames of the current chunk and not yet flushed.
    private var unflushed = false

    /// - Parameters:
    ///   - idleTimeout: closes the connection when a partial frame sits this long; nil disables.
    init(
        router: RPCRouter, hub: EventHub, tracker: RequestTracker, logger: Logger, maxInFlight: Int,
        maxFrameBytes: Int, idleTimeout: TimeAmount?, connectionID: UInt64
    ) {
        self.router = router
        self.hub = hub
        self.tracker = tracker
        self.logger = logger
        self.maxInFlight = maxInFlight
        self.frames = FrameReader(maxFrameBytes: maxFrameBytes, idleTimeout: idleTimeout)
        self.connectionID = connectionID
    }

    func channelActive(context: ChannelHandlerContext) {
        connection = RPCConnection(id: connectionID, channel: context.channel)
        executor = EventLoopTaskExecutor(context.eventLoop)
        allocator = context.channel.allocator
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        frames.stop()
        if let connection { hub.remove(connection) }
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        frames.stop()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing, let connection else { return }
        frames.receive(unwrapInboundIn(data))
        while !closing, let frame = frames.next() {
            switch frame {
            case .violation(let error):
                protocolError(context, error)
            case .frame(let buffer):
                request(context, buffer, connection)
            }
        }
        frames.settle(context)
        if unflushed {
            unflushed = false
            context.flush()
        }
    }

    private func request(_ context: ChannelHandlerContext, _ buffer: ByteBuffer, _ connection: RPCConnection) {
        let envelope: JSONReader.Envelope
        do {
            guard let read = try FramePayload.envelope(buffer) else {
                protocolError(context, .invalidRequest("A frame must hold one JSON object, not an array or a scalar."))
                return
            }
            envelope = read
        } catch {
            protocolError(context, error)
            return
        }
        switch RPCRequest.parse(envelope) {
        case .failure(let rejected):
            write(context, RPCResponse(id: rejected.id, outcome: .failure(rejected.error)), flush: false)
        case .success(let request):
            start(context, request, connection)
        }
    }

    private func start(_ context: ChannelHandlerContext, _ request: RPCRequest, _ connection: RPCConnection) {
        let rpc = RPCContext(request: request, connection: connection)
        if let outcome = router.answerNow(rpc) {
            answer(context, request, outcome, flush: false)
            return
        }
        inFlight += 1
        let router = self.router
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let answer = context.eventLoop.makePromise(of: Result<JSONValue, RPCError>.self)
        tracker.run(answer, on: executor) { await router.dispatch(rpc) }
        answer.futureResult.whenComplete { result in
            let (handler, context) = loopBound.value
            handler.finish(context, request, result)
        }
    }

    private func finish(_ context: ChannelHandlerContext, _ request: RPCRequest, _ result: Result<Result<JSONValue, RPCError>, Error>) {
        inFlight -= 1
        defer { tracker.end() }
        switch result {
        case .success(let outcome): answer(context, request, outcome, flush: true)
        case .failure(let error): answer(context, request, .failure(.internalError("\(error)")), flush: true)
        }
        resumeReadingIfAllowed(context)
    }

    /// Writes the answer (none to a notification) and logs an internal error. `flush`: at once,
    /// else at the end of the chunk being read.
    private func answer(
        _ context: ChannelHandlerContext, _ request: RPCRequest, _ outcome: Result<JSONValue, RPCError>, flush: Bool
    ) {
        if case .failure(let e) = outcome, e.code == -32603, e.name != RPCErrorKind.shuttingDown.name {
            logger.error("request failed", metadata: ["method": "\(request.method)", "error": "\(e.message)"])
        }
        // To a connection closed meanwhile, NIO drops the write (its promise, none here, fails).
        if let id = request.id {
            write(context, RPCResponse(id: id, outcome: outcome), flush: flush)
        }
    }

    private var mayRead: Bool { inFlight < maxInFlight }

    private func resumeReadingIfAllowed(_ context: ChannelHandlerContext) {
        if readPending && mayRead && context.channel.isWritable {
            readPending = false
            frames.pause(false, context)
            context.read()
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        resumeReadingIfAllowed(context)
        context.fireChannelWritabilityChanged()
    }

    /// Answers once with `id: null`, then closes: docs/protocol.md's rule for framing and parse errors.
    private func protocolError(_ context: ChannelHandlerContext, _ error: RPCError) {
        closing = true
        logger.notice("protocol error, closing connection", metadata: ["error": "\(error)"])
        let buffer = OutboundFrame.buffer(RPCResponse(id: nil, outcome: .failure(error)).bytes, allocator: allocator)
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(buffer)).whenComplete { _ in
            loopBound.value.close(promise: nil)
        }
    }

    private func write(_ context: ChannelHandlerContext, _ response: RPCResponse, flush: Bool) {
        scratch.removeAll(keepingCapacity: true)
        response.write(into: &scratch)
        let frame = wrapOutboundOut(OutboundFrame.buffer(scratch, allocator: allocator))
        if flush {
            context.writeAndFlush(frame, promise: nil)
        } else {
            context.write(frame, promise: nil)
            unflushed = true
        }
        // A rare large answer does not pin its memory for the connection's lifetime.
        if scratch.capacity > Self.scratchKept { scratch = [] }
    }

    /// The most memory `scratch` keeps between answers (a `service.status` is about 600 bytes).
    private static let scratchKept = 16 * 1024

    func read(context: ChannelHandlerContext) {
        if !mayRead || !context.channel.isWritable {
            if !readPending {
                readPending = true
                frames.pause(true, context)
            }
        } else {
            context.read()
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        logger.debug("connection error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }
}

/// Runs and counts the requests being handled across all connections, so a graceful shutdown
/// can wait for them to finish, and cancel those that do not in time.
final class RequestTracker: Sendable {
    private struct State {
        /// Requests not yet answered (the answer is written after the task ends).
        var count = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var tasks: [UInt64: Task<Void, Never>] = [:]
        var nextID: UInt64 = 0
        var cancelled = false
    }
    private let state = NIOLockedValueBox(State())

    /// Runs `work` as a task of its own, on `executor` when given, and fulfils `answer` with its
    /// result; `end()` follows once the answer is written. A request cancelled by `cancelAll`
    /// that fails is answered `ShuttingDown`.
    func run(
        _ answer: EventLoopPromise<Result<JSONValue, RPCError>>, on executor: (any TaskExecutor)? = nil,
        _ work: @escaping @Sendable () async -> Result<JSONValue, RPCError>
    ) {
        state.withLockedValue { s in
            s.count += 1
            let id = s.nextID
            s.nextID += 1
            // Created under the lock: the task's own removal waits until it is registered.
            let task = Task(executorPreference: executor) { [self] in
                var result = await work()
                if Task.isCancelled, case .failure = result {
                    result = .failure(
                        RPCErrorKind.shuttingDown.error(
                            "The service is stopping and gave up on this request; send it again once the service is back."))
                }
                state.withLockedValue { _ = $0.tasks.removeValue(forKey: id) }
                answer.succeed(result)
            }
            if s.cancelled { task.cancel() }
            s.tasks[id] = task
        }
    }

    func end() {
        let waiters = state.withLockedValue { s -> [CheckedContinuation<Void, Never>] in
            s.count -= 1
            guard s.count == 0 else { return [] }
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        waiters.forEach { $0.resume() }
    }

    var count: Int { state.withLockedValue { $0.count } }

    /// Cancels every request in flight and every one that starts from now on.
    func cancelAll() {
        let tasks = state.withLockedValue { s -> [Task<Void, Never>] in
            s.cancelled = true
            return Array(s.tasks.values)
        }
        tasks.forEach { $0.cancel() }
    }

    /// Returns once no request is in flight, or when the calling task is cancelled.
    func drained() async {
        let id = state.withLockedValue { s -> UInt64 in
            defer { s.nextID += 1 }
            return s.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let ready = state.withLockedValue { s -> Bool in
                    if s.count == 0 || Task.isCancelled { return true }
                    s.waiters[id] = c
                    return false
                }
                if ready { c.resume() }
            }
        } onCancel: {
            state.withLockedValue { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}
