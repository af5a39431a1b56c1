import NIOCore

/// `FrameReader` as a channel handler: hands each whole frame, or the framing violation that
/// ends the stream, up the pipeline as an `InboundFrame`. The client's pipeline uses it; the
/// server's connection handler reads frames itself.
public final class FrameDecoder: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = InboundFrame
    public typealias OutboundIn = NIOAny

    private var reader: FrameReader

    /// - Parameters:
    ///   - idleTimeout: closes the connection when a partial frame sits this long; nil disables.
    public init(maxFrameBytes: Int, idleTimeout: TimeAmount?) {
        reader = FrameReader(maxFrameBytes: maxFrameBytes, idleTimeout: idleTimeout)
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !reader.broken else { return }
        reader.receive(unwrapInboundIn(data))
        while let frame = reader.next() {
            context.fireChannelRead(wrapInboundOut(frame))
        }
        reader.settle(context)
    }

    public func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard let pressure = event as? ReadBackpressure else {
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
        reader.pause(pressure == .paused, context)
        promise?.succeed(())
    }

    public func channelInactive(context: ChannelHandlerContext) {
        reader.stop()
        context.fireChannelInactive()
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        reader.stop()
    }
}

/// Sent down the pipeline by a handler above `FrameDecoder` when it stops and resumes reading.
public enum ReadBackpressure: Sendable, Equatable {
    case paused, resumed
}
