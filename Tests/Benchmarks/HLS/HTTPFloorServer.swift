import ArgumentParser
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// `cassette-bench http-floor` (hidden; `hls` starts it): the least a SwiftNIO HTTP server can do
/// to answer the media server's master playlist. It answers every request, on the event loop,
/// with the bytes of one file held in memory and the headers the player's media server sends:
/// no routing, no catalog, no task. Its time to first byte is the floor under the media
/// server's, set by SwiftNIO and the kernel.
struct HTTPFloorServer: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "http-floor", abstract: "Serves one file from memory over SwiftNIO HTTP, for `hls`.", shouldDisplay: false)

    @Option(help: "The file whose bytes every answer carries.")
    var body: String

    @Option(help: "Where to write the port listened on (127.0.0.1, chosen by the kernel).")
    var portFile: String

    func run() throws {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: body))
        let answer = ByteBuffer(bytes: bytes)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let channel = try ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(FixedHTTPAnswerHandler(body: answer))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .wait()
        try String(channel.localAddress?.port ?? 0).write(toFile: portFile, atomically: true, encoding: .utf8)
        try channel.closeFuture.wait()
    }
}

/// Answers every complete request with 200 and `body`.
private final class FixedHTTPAnswerHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let body: ByteBuffer
    private var head: HTTPRequestHead?

    init(body: ByteBuffer) { self.body = body }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            head = request
        case .body:
            break
        case .end:
            guard let request = head else { return }
            head = nil
            let headers = HTTPHeaders([
                ("Content-Type", "application/vnd.apple.mpegurl"), ("Cache-Control", "no-store"),
                ("Content-Length", String(body.readableBytes)),
                ("Connection", request.isKeepAlive ? "keep-alive" : "close"),
            ])
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: .ok, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
            let keepAlive = request.isKeepAlive, channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
                if !keepAlive { channel.close(promise: nil) }
            }
        }
    }
}
