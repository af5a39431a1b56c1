import NIOCore

/// What the frame reader finds in the byte stream: a whole frame, or the reason the
/// connection broke the framing rules (answered once, then the connection closes).
///
/// The violation is `indirect` so that the enum is no larger than a `ByteBuffer`: it then fits
/// `NIOAny`'s inline storage, and handing a frame up the pipeline allocates nothing.
public enum InboundFrame {
    case frame(ByteBuffer)
    indirect case violation(RPCError)
}

/// Splits a byte stream into length-prefixed frames (4-byte big-endian length, then N bytes)
/// and keeps the partial-frame idle clock: the framing rules of docs/protocol.md, in one place
/// for both the server's connection handler (`RPCServerHandler`, which reads frames itself to
/// flush the answers to one chunk's frames at once) and `FrameDecoder` (the client's).
///
/// Why not NIOExtras' `LengthFieldBasedFrameDecoder`: it learns a frame is too large only
/// once `maximumBufferSize` bytes have been buffered, so a client announcing a 4 GiB frame
/// and then waiting would hear nothing until the idle timer fired; docs/protocol.md wants an
/// immediate answer. It also cannot tell "partial frame pending" from "between frames",
/// which the idle limit needs. The encoder side is `OutboundFrame`.
///
/// Never holds more than one maximum frame plus its header per connection. Used on its
/// channel's event loop only.
struct FrameReader {
    private let maxFrameBytes: Int
    private let idleTimeout: TimeAmount?
    private var buffer: ByteBuffer?
    private var idleTimer: Scheduled<Void>?
    /// True once a violation was reported: nothing after it is read.
    private(set) var broken = false
    /// True while the reader's owner has stopped reading (backpressure). The client is not
    /// idling then, we are: the partial-frame clock stops until reading resumes.
    private var readsPaused = false

    /// - Parameters:
    ///   - idleTimeout: closes the connection when a partial frame sits this long; nil disables.
    init(maxFrameBytes: Int, idleTimeout: TimeAmount?) {
        self.maxFrameBytes = maxFrameBytes
        self.idleTimeout = idleTimeout
    }

    /// Adds bytes read from the socket; `next()` then hands out the frames they complete.
    mutating func receive(_ incoming: ByteBuffer) {
        guard !broken else { return }
        if buffer == nil {
            buffer = incoming
        } else {
            var incoming = incoming
            buffer!.writeBuffer(&incoming)
        }
    }

    /// The next whole frame, or the violation that ends the stream; nil when the bytes held
    /// do not yet make a frame (call `settle` once done with the read).
    mutating func next() -> InboundFrame? {
        guard !broken, var buf = buffer, let length = buf.getInteger(at: buf.readerIndex, as: UInt32.self) else { return nil }
        if length == 0 {
            return fail(.invalidRequest("Frame length 0: a frame must hold one JSON object.", name: "EmptyFrame"))
        }
        if Int(length) > maxFrameBytes {
            return fail(
                .invalidRequest(
                    "Frame of \(length) bytes exceeds the limit of \(maxFrameBytes) bytes; split the request or raise maxFrameBytes.",
                    name: "FrameTooLarge"))
        }
        guard buf.readableBytes >= 4 + Int(length) else { return nil }
        buf.moveReaderIndex(forwardBy: 4)
        let frame = buf.readSlice(length: Int(length))!
        buffer = buf.readableBytes > 0 ? buf : nil
        // A whole frame arrived: whatever follows is a new partial frame with its own clock.
        idleTimer?.cancel()
        idleTimer = nil
        return .frame(frame)
    }

    /// Ends a read: compacts the partial frame held, if any, and runs its idle clock.
    mutating func settle(_ context: ChannelHandlerContext) {
        if buffer != nil {
            // Keep the held bytes compact so a slow trickle of one frame cannot fragment memory.
            buffer!.discardReadBytes()
        }
        updateIdleTimer(context)
    }

    /// The owner stopped (`true`) or resumed reading from the socket.
    mutating func pause(_ paused: Bool, _ context: ChannelHandlerContext) {
        readsPaused = paused
        if readsPaused {
            idleTimer?.cancel()
            idleTimer = nil
        } else {
            updateIdleTimer(context)
        }
    }

    /// The connection closed or its handler left the pipeline.
    mutating func stop() {
        idleTimer?.cancel()
        idleTimer = nil
    }

    private mutating func fail(_ error: RPCError) -> InboundFrame {
        broken = true
        buffer = nil
        idleTimer?.cancel()
        return .violation(error)
    }

    /// The timer runs only while a partial frame is held, and from the moment it began: a
    /// connection idle between frames (an event subscriber, say) is never closed, and a
    /// client trickling one byte at a time cannot hold a partial frame forever.
    private mutating func updateIdleTimer(_ context: ChannelHandlerContext) {
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
