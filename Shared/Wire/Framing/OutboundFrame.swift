import NIOCore

/// One frame as it goes out: the 4-byte big-endian length, then the payload, in one buffer.
///
/// Written here rather than by NIOExtras' `LengthFieldPrepender`, which writes the length as a
/// buffer of its own: every answer and event then cost a second allocation and a two-part
/// `writev`. The payload's length is known before its bytes are copied, so one buffer holds both.
enum OutboundFrame {
    static func buffer(_ payload: [UInt8], allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 4 + payload.count)
        buffer.writeInteger(UInt32(payload.count))
        buffer.writeBytes(payload)
        return buffer
    }

    static func buffer(_ value: JSONValue, allocator: ByteBufferAllocator) -> ByteBuffer {
        buffer(JSONWriter.write(value), allocator: allocator)
    }
}
