import NIOCore
import NIOEmbedded
import XCTest

@testable import Wire

/// The frame decoder in memory, on NIO's EmbeddedChannel.
final class FrameDecoderTests: XCTestCase {
    func makeChannel(max: Int = 64, idle: TimeAmount? = nil) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(FrameDecoder(maxFrameBytes: max, idleTimeout: idle))
        return channel
    }

    func bytes(_ b: [UInt8]) -> ByteBuffer { ByteBuffer(bytes: b) }

    func frames(_ channel: EmbeddedChannel) throws -> [InboundFrame] {
        var out: [InboundFrame] = []
        while let f = try channel.readInbound(as: InboundFrame.self) { out.append(f) }
        return out
    }

    func testFrameSplitAcrossWritesIsReassembled() throws {
        let channel = try makeChannel()
        let whole: [UInt8] = [0, 0, 0, 3, 0x61, 0x62, 0x63]
        for b in whole { try channel.writeInbound(bytes([b])) }
        let got = try frames(channel)
        XCTAssertEqual(got.count, 1)
        guard case .frame(let buf) = got[0] else { return XCTFail("expected a frame") }
        XCTAssertEqual(String(buffer: buf), "abc")
    }

    func testManyFramesInOneWrite() throws {
        let channel = try makeChannel()
        try channel.writeInbound(bytes([0, 0, 0, 1, 0x31, 0, 0, 0, 2, 0x32, 0x32, 0, 0, 0, 1, 0x33]))
        let texts = try frames(channel).compactMap { f -> String? in
            if case .frame(let b) = f { return String(buffer: b) }
            return nil
        }
        XCTAssertEqual(texts, ["1", "22", "3"])
    }

    func testZeroLengthIsAViolation() throws {
        let channel = try makeChannel()
        try channel.writeInbound(bytes([0, 0, 0, 0]))
        guard case .violation(let e) = try frames(channel).first else { return XCTFail("expected a violation") }
        XCTAssertEqual(e.name, "EmptyFrame")
    }

    func testOversizeIsReportedFromTheHeaderAndNothingAfterIsRead() throws {
        let channel = try makeChannel(max: 8)
        try channel.writeInbound(bytes([0, 0, 0, 9]))
        guard case .violation(let e) = try frames(channel).first else { return XCTFail("expected a violation") }
        XCTAssertEqual(e.name, "FrameTooLarge")
        try channel.writeInbound(bytes([0, 0, 0, 1, 0x31]))
        XCTAssertTrue(try frames(channel).isEmpty)
    }

    func testExactlyMaximumSizeIsAccepted() throws {
        let channel = try makeChannel(max: 8)
        try channel.writeInbound(bytes([0, 0, 0, 8] + Array(repeating: 0x61, count: 8)))
        guard case .frame(let b) = try frames(channel).first else { return XCTFail("expected a frame") }
        XCTAssertEqual(b.readableBytes, 8)
    }

    func testPartialFrameIsClosedAfterTheIdleLimit() throws {
        let channel = try makeChannel(idle: .seconds(30))
        try channel.connect(to: SocketAddress(unixDomainSocketPath: "/tmp/x")).wait()
        try channel.writeInbound(bytes([0, 0, 0, 5, 0x31]))
        channel.embeddedEventLoop.advanceTime(by: .seconds(29))
        XCTAssertTrue(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .seconds(2))
        XCTAssertFalse(channel.isActive)
    }

    func testIdleBetweenFramesIsNotClosed() throws {
        let channel = try makeChannel(idle: .seconds(30))
        try channel.connect(to: SocketAddress(unixDomainSocketPath: "/tmp/x")).wait()
        try channel.writeInbound(bytes([0, 0, 0, 1, 0x31]))
        channel.embeddedEventLoop.advanceTime(by: .seconds(120))
        XCTAssertTrue(channel.isActive)
        _ = try? channel.finish()
    }

    func testIdleClockStartsWhenThePartialFrameBegins() throws {
        let channel = try makeChannel(idle: .seconds(30))
        try channel.connect(to: SocketAddress(unixDomainSocketPath: "/tmp/x")).wait()
        try channel.writeInbound(bytes([0, 0, 0, 5]))
        // Trickling a byte every 20 s does not keep a partial frame alive forever.
        channel.embeddedEventLoop.advanceTime(by: .seconds(20))
        try channel.writeInbound(bytes([0x31]))
        channel.embeddedEventLoop.advanceTime(by: .seconds(11))
        XCTAssertFalse(channel.isActive)
    }
}

extension FrameDecoderTests {
    func testIdleClockStopsWhileReadsArePausedByBackpressure() throws {
        let channel = try makeChannel(idle: .seconds(30))
        try channel.connect(to: SocketAddress(unixDomainSocketPath: "/tmp/x")).wait()
        try channel.writeInbound(bytes([0, 0, 0, 5, 0x31]))
        channel.pipeline.triggerUserOutboundEvent(ReadBackpressure.paused, promise: nil)
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        XCTAssertTrue(channel.isActive, "the service stopped reading; the client is not idle")
        channel.pipeline.triggerUserOutboundEvent(ReadBackpressure.resumed, promise: nil)
        channel.embeddedEventLoop.advanceTime(by: .seconds(31))
        XCTAssertFalse(channel.isActive)
    }
}
