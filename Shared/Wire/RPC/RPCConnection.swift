import NIOConcurrencyHelpers
import NIOCore

/// One client connection as the rest of the service sees it: an identity, and a way to
/// push frames to it. Safe to use from any thread; writes hop onto the channel's loop.
public final class RPCConnection: Sendable, Hashable {
    public let id: UInt64
    let channel: Channel

    init(id: UInt64, channel: Channel) {
        self.id = id
        self.channel = channel
    }

    /// Encodes and writes one JSON object as a frame. The returned future completes when the
    /// bytes are handed to the kernel, which is how the event backlog counts what is unread.
    @discardableResult
    func send(_ value: JSONValue) -> EventLoopFuture<Void> {
        channel.writeAndFlush(OutboundFrame.buffer(value, allocator: channel.allocator))
    }

    public func close() {
        channel.close(promise: nil)
    }

    public static func == (a: RPCConnection, b: RPCConnection) -> Bool { a.id == b.id }
    public func hash(into h: inout Hasher) { h.combine(id) }
}
