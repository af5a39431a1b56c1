import ArgumentParser
import Foundation
import NIOCore
import NIOPosix

/// `cassette-bench nio-floor` (hidden; `status` starts it): the least a SwiftNIO server can do per
/// request on Cassette's framing. It reads each length-prefixed frame and answers with one fixed
/// frame of the size of the player's `service.status` answer: no JSON parsed or written, no
/// router, no task. Its round trip is the floor under Cassette's, set by SwiftNIO and the
/// kernel: what Cassette spends above it is its own, and what MPD saves below it is SwiftNIO's.
struct NIOFloorServer: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nio-floor", abstract: "Serves fixed answers over SwiftNIO, for `status`.", shouldDisplay: false)

    @Option(help: "The Unix socket to bind.")
    var socket: String

    @Option(help: "Bytes of each answer's JSON (its frame adds 4).")
    var answerBytes: Int = 560

    func run() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let answer = Self.answer(bytes: answerBytes)
        let channel = try ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(FixedAnswerHandler(answer: answer))
                }
            }
            .bind(unixDomainSocketPath: socket, cleanupExistingSocketFile: true)
            .wait()
        try channel.closeFuture.wait()
    }

    /// A frame holding a JSON-RPC answer padded to `bytes`: the bench's client checks `result`.
    static func answer(bytes: Int) -> ByteBuffer {
        let head = #"{"jsonrpc":"2.0","id":1,"result":{"pad":""#, tail = #""}}"#
        let body = head + String(repeating: "x", count: max(0, bytes - head.utf8.count - tail.utf8.count)) + tail
        var buffer = ByteBuffer()
        buffer.writeInteger(UInt32(body.utf8.count))
        buffer.writeString(body)
        return buffer
    }
}

/// Answers every complete frame read with `answer`; written without a ByteToMessageDecoder so
/// that nothing but the channel itself stands between the read and the write.
private final class FixedAnswerHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let answer: ByteBuffer
    private var pending = ByteBuffer()

    init(answer: ByteBuffer) { self.answer = answer }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        pending.writeBuffer(&bytes)
        var answered = false
        while let length = pending.getInteger(at: pending.readerIndex, as: UInt32.self),
            pending.readableBytes >= 4 + Int(length)
        {
            pending.moveReaderIndex(forwardBy: 4 + Int(length))
            context.write(wrapOutboundOut(answer), promise: nil)
            answered = true
        }
        pending.discardReadBytes()
        if answered { context.flush() }
    }
}
