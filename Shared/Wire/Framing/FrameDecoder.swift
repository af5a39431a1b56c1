import NIOCore

/// What the frame decoder hands up the pipeline: a whole frame, or the reason the
/// connection broke the framing rules (answered once, then the connection closes).
///
/// The violation is `indirect` so that the enum is no larger than a `ByteBuffer`: it then fits
/// `NIOAny`'s inline storage, and handing a frame up the pipeline allocates nothing.
public enum InboundFrame {
    case frame(ByteBuffer)
    indirect case violation(RPCError)
}

/// Splits a byte stream into length-prefixed frames (4-byte big-endian length, then N bytes).
///
/// Why not NIOExtras' `LengthFieldBasedFrameDecoder`: it learns a frame is too large only
/// once `maximumBufferSize` bytes have been buffered, so a client announcing a 4 GiB frame
/// and then waiting would hear nothing until the idle timer fired; docs/protocol.md wants an
/// immediate answer. It also cannot tell "partial frame pending" from "between frames",
/// which the idle limit needs. The encoder side is `OutboundFrame`.
///
/// Never holds more than one maximum frame plus its header per connection.
public final class FrameDecoder: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = InboundFrame
    public typealias OutboundIn = NIOAny

    private let maxFrameBytes: Int
    private let idleTimeout: TimeAmount?
    private var buffer: ByteBuffer?
    private var idleTimer: Scheduled<Void>?
    private var broken = false
    /// True while the handler above has stopped reading (backpressure). The client is not
    /// idling then, we are: the partial-frame clock stops until reading resumes.
    private var readsPaused = false

    /// - Parameters:
    ///   - idleTimeout: closes the connection when a partial frame sits this long; nil disables.
    public init(maxFrameBytes: Int, idleTimeout: TimeAmount?) {
        self.maxFrameBytes = maxFrameBytes
        self.idleTimeout = idleTimeout
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !broken else { return }
        var incoming = unwrapInboundIn(data)
        if buffer == nil { buffer = incoming } else { buffer!.writeBuffer(&incoming) }
        while !broken, var buf = buffer, let length = buf.getInteger(at: buf.readerIndex, as: UInt32.self) {
            if length == 0 {
                fail(context, .invalidRequest("Frame length 0: a frame must hold one JSON object.", name: "EmptyFrame"))
                return
            }
            if Int(length) > maxFrameBytes {
                fail(
                    context,
                    .invalidRequest(
                        "Frame of \(length) bytes exceeds the limit of \(maxFrameBytes) bytes; split the request or raise maxFrameBytes.",
                        name: "FrameTooLarge"))
                return
            }
            guard buf.readableBytes >= 4 + Int(length) else { break }
            buf.moveReaderIndex(forwardBy: 4)
            let frame = buf.readSlice(length: Int(length))!
            buffer = buf.readableBytes > 0 ? buf : nil
            // A whole frame arrived: whatever follows is a new partial frame with its own clock.
            idleTimer?.cancel()
            idleTimer = nil
            context.fireChannelRead(wrapInboundOut(.frame(frame)))
        }
        if buffer != nil {
            // Keep the held bytes compact so a slow trickle of one frame cannot fragment memory.
            buffer!.discardReadBytes()
        }
        updateIdleTimer(context)
    }

    public func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard let pressure = event as? ReadBackpressure else {
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
        readsPaused = pressure == .paused
        if readsPaused {
            idleTimer?.cancel()
            idleTimer = nil
        } else {
            updateIdleTimer(context)
        }
        promise?.succeed(())
    }

    public func channelInactive(context: ChannelHandlerContext) {
        idleTimer?.cancel()
        idleTimer = nil
        context.fireChannelInactive()
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        idleTimer?.cancel()
    }

    private func fail(_ context: ChannelHandlerContext, _ error: RPCError) {
        broken = true
        buffer = nil
        idleTimer?.cancel()
        context.fireChannelRead(wrapInboundOut(.violation(error)))
    }

    /// The timer runs only while a partial frame is held, and from the moment it began: a
    /// connection idle between frames (an event subscriber, say) is never closed, and a
    /// client trickling one byte at a time cannot hold a partial frame forever.
    private func updateIdleTimer(_ context: ChannelHandlerContext) {
        if buffer == nil || broken || readsPaused {
            idleTimer?.cancel()
            idleTimer = nil
            return
        }
        guard idleTimer == nil, let idleTimeout else { return }
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        idleTimer = context.eventLoop.scheduleTask(in: idleTimeout) {
            loopBound.value.close(promise: nil)
        }
    }
}

/// Sent down the pipeline by the request handler when it stops and resumes reading.
public enum ReadBackpressure: Sendable, Equatable {
    case paused, resumed
}
