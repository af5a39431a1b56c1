import Logging
import NIOCore
import NIOHTTP1

/// Between the HTTP codec and a connection's task (`MediaServerService.handle`): answers on the
/// event loop what `MediaResponder.keptAnswer` can answer from what is kept (a playlist asked
/// again while the catalog has not changed), with no hop to a task or a thread; every other
/// request goes on to the task.
///
/// Answers keep their order: a request is answered here only while every earlier one has been
/// answered. It also holds the connection's cut (`MediaResponse.cutAt`), whoever answered:
/// armed with an answer (`arm`), disarmed when the client asks again (it has read that answer by
/// then) or the connection ends, since what NIO and the kernel still hold of an answer outlives
/// the writes that handed it over.
final class KeptAnswerHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let responder: MediaResponder
    private let logger: Logger
    /// Requests passed on to the task whose answer has not ended yet.
    private var passedOn = 0
    /// A GET or HEAD held until its end, then answered here or passed on.
    private var held: HTTPRequestHead?
    private var cut: Task<Void, Never>?
    private var channel: Channel?

    init(responder: MediaResponder, logger: Logger) {
        self.responder = responder
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        channel = context.channel
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch part {
        case .head(let request):
            disarm()
            if passedOn == 0, request.method == .GET || request.method == .HEAD {
                held = request
                return
            }
            context.fireChannelRead(wrapInboundOut(part))
        case .body:
            if let request = held {
                held = nil
                context.fireChannelRead(wrapInboundOut(.head(request)))
            }
            context.fireChannelRead(wrapInboundOut(part))
        case .end:
            if let request = held {
                held = nil
                if let response = responder.keptAnswer(to: request) {
                    answer(response, to: request, context: context)
                    return
                }
                context.fireChannelRead(wrapInboundOut(.head(request)))
            }
            passedOn += 1
            context.fireChannelRead(wrapInboundOut(part))
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { passedOn = max(0, passedOn - 1) }
        context.write(data, promise: promise)
    }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        context.fireChannelInactive()
    }

    /// Arms the cut of the answer being sent: at `instant` the connection is reset.
    func arm(at instant: ContinuousClock.Instant, uri: String) {
        guard let channel else { return }
        disarm()
        let logger = logger
        cut = Task {
            do { try await Task.sleep(until: instant, clock: .continuous) } catch { return }
            MediaServerService.reset(channel, uri: uri, logger: logger)
        }
    }

    private func disarm() {
        cut?.cancel()
        cut = nil
    }

    private func answer(_ response: MediaResponse, to request: HTTPRequestHead, context: ChannelHandlerContext) {
        if let instant = response.cutAt { arm(at: instant, uri: request.uri) }
        context.write(wrapOutboundOut(.head(response.head(for: request))), promise: nil)
        if request.method != .HEAD, case .bytes(let bytes) = response.body, !bytes.isEmpty {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: bytes)))), promise: nil)
        }
        let sent = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !request.isKeepAlive {
            // As the task does: the output is shut once all of it is written (closing at once
            // could drop what NIO still holds), and the connection ends with the client's close.
            let channel = context.channel
            sent.whenComplete { _ in channel.close(mode: .output, promise: nil) }
        }
    }
}
