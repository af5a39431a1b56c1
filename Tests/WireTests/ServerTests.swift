import Foundation
import Logging
import NIOCore
import NIOPosix
import TestSupport
import XCTest

@testable import Wire

/// The server in-process on a real Unix socket: event backlog and graceful shutdown.
final class ServerTests: XCTestCase {
    var dir: String!

    override func setUp() {
        dir = "/tmp/cwt-\(UUID().uuidString.prefix(8))"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: dir)
    }

    func makeServer(_ configure: (inout RPCRouter) -> Void = { _ in }, limits: WireLimits = WireLimits()) async throws -> (RPCServer, String) {
        var router = RPCRouter()
        configure(&router)
        let server = RPCServer(router: router, limits: limits, logger: Logger(label: "test"))
        let path = dir + "/s.sock"
        try await server.start(.path(path))
        return (server, path)
    }

    func testEventsReachSubscribersOfTheirTopicWithGrowingSeq() async throws {
        let (server, path) = try await makeServer()
        let client = try await RPCClient.connect(path: path)
        _ = try await client.call("events.subscribe", ["topics": ["player"]])
        server.hub.publish(topic: "downloads", type: "OfflineStarted")
        server.hub.publish(topic: "player", type: "PlaybackStateChanged", data: ["playbackState": "PLAYING"])
        var iterator = client.events.makeAsyncIterator()
        let event = await iterator.next()
        XCTAssertEqual(event?.type, "PlaybackStateChanged")
        XCTAssertEqual(event?.seq, 2, "seq counts every event of the service, so a client sees the gap")
        _ = try await client.call("events.unsubscribe", ["topics": ["player"]])
        await client.close()
        await server.shutdownGracefully()
    }

    /// Many threads publishing at once (as a busy service's tasks and event loops do): every
    /// subscriber still receives every event, in `seq` order.
    func testEventsReachEverySubscriberInSeqOrderWhilePublishedFromManyThreads() async throws {
        var limits = WireLimits()
        limits.eventBacklog = 100_000
        let (server, path) = try await makeServer(limits: limits)
        let publishers = 8, perPublisher = 400, subscribers = 12
        var clients: [RPCClient] = []
        for _ in 0..<subscribers {
            let client = try await RPCClient.connect(path: path)
            _ = try await client.call("events.subscribe", ["topics": ["downloads"]])
            clients.append(client)
        }
        let threads = (0..<publishers).map { p in
            Thread {
                for i in 0..<perPublisher {
                    server.hub.publish(topic: "downloads", type: "OfflineProgress", data: ["publisher": .number(Double(p)), "i": .number(Double(i))])
                }
            }
        }
        threads.forEach { $0.start() }
        let total = publishers * perPublisher
        try await withThrowingTaskGroup(of: [UInt64].self) { group in
            for client in clients {
                group.addTask {
                    var seqs: [UInt64] = []
                    for await event in client.events {
                        seqs.append(event.seq)
                        if seqs.count == total { break }
                    }
                    return seqs
                }
            }
            for try await seqs in group {
                XCTAssertEqual(seqs.count, total)
                let misordered = zip(seqs, seqs.dropFirst()).filter { $0.0 >= $0.1 }
                XCTAssertTrue(misordered.isEmpty, "\(misordered.count) events out of order, first: \(misordered.prefix(3))")
            }
        }
        for client in clients { await client.close() }
        await server.shutdownGracefully()
    }

    func testSubscriberThatDoesNotReadGetsOverflowAndIsDisconnected() async throws {
        var limits = WireLimits()
        limits.eventBacklog = 16
        let (server, path) = try await makeServer(limits: limits)
        // A raw client that subscribes and then never reads again.
        let raw = try RawSocket(path: path)
        try raw.sendFrame(#"{"jsonrpc":"2.0","id":1,"method":"events.subscribe","params":{"topics":["catalog"]}}"#)
        try await waitUntil { server.hub.subscriberCount == 1 }
        let big = JSONValue.string(String(repeating: "x", count: 64 * 1024))
        for _ in 0..<2000 where server.hub.subscriberCount > 0 {
            server.hub.publish(topic: "catalog", type: "ItemStateChanged", data: ["blob": big])
        }
        XCTAssertEqual(server.hub.subscriberCount, 0, "a stuck subscriber must be dropped")
        // Reading now drains what was queued: it ends with the Overflow event, then EOF.
        let types = readAllEventTypes(raw.fd)
        XCTAssertEqual(types.last, "Overflow")
        XCTAssertLessThan(types.count, 2000)
        try await waitUntil { server.connectionCount == 0 }
        await server.shutdownGracefully()
    }

    func testGracefulShutdownLetsInFlightRequestsFinish() async throws {
        let (server, path) = try await makeServer { router in
            router.register("slow") { _ in
                try await Task.sleep(nanoseconds: 500_000_000)
                return "done"
            }
        }
        let client = try await RPCClient.connect(path: path)
        async let answer = client.call("slow")
        try await waitUntil { server.inFlightRequests == 1 }
        await server.shutdownGracefully()
        let result = try await answer
        XCTAssertEqual(result, "done")
        // And nothing new is accepted.
        do {
            _ = try await RPCClient.connect(path: path)
            XCTFail("the listener should be closed")
        } catch {}
    }

    func testPipelinedRequestsEachGetTheirOwnAnswer() async throws {
        let (server, path) = try await makeServer { router in
            router.register("echo") { ctx in ctx.request.params["v"] ?? .null }
        }
        let client = try await RPCClient.connect(path: path)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<500 {
                group.addTask {
                    let r = try await client.call("echo", ["v": .number(Double(i))])
                    XCTAssertEqual(r.intValue, i)
                }
            }
            try await group.waitForAll()
        }
        await client.close()
        await server.shutdownGracefully()
    }

    func testThrownTypedErrorKeepsItsNameOnTheWire() async throws {
        struct Quota: RPCErrorConvertible {
            var rpcError: RPCError { RPCError(code: 4010, name: "MonthlyStreamQuotaExceeded", message: "Quota used up.") }
        }
        let (server, path) = try await makeServer { router in
            router.register("fail") { _ in throw Quota() }
        }
        let client = try await RPCClient.connect(path: path)
        do {
            _ = try await client.call("fail")
            XCTFail("expected an error")
        } catch let error as RPCError {
            XCTAssertEqual(error.name, "MonthlyStreamQuotaExceeded")
            XCTAssertEqual(error.code, 4010)
        }
        await client.close()
        await server.shutdownGracefully()
    }

    // MARK: helpers

    func waitUntil(timeout: Double = 10, _ condition: () -> Bool) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            guard Date() < deadline else { throw ConditionTimeout(seconds: timeout) }
            try await Task.sleep(nanoseconds: 10_000_000)
        }
    }

    /// Reads everything until EOF and returns the event types seen, in order.
    func readAllEventTypes(_ fd: Int32) -> [String] {
        var data = [UInt8]()
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            data += buf[0..<n]
        }
        var types: [String] = []
        var i = 0
        while i + 4 <= data.count {
            let n = Int(data[i]) << 24 | Int(data[i + 1]) << 16 | Int(data[i + 2]) << 8 | Int(data[i + 3])
            guard i + 4 + n <= data.count else { break }
            if let v = try? JSONCoding.decoder().decode(JSONValue.self, from: Data(data[(i + 4)..<(i + 4 + n)])),
                let e = RPCEvent(json: v)
            {
                types.append(e.type)
            }
            i += 4 + n
        }
        return types
    }
}

struct ConditionTimeout: Error {
    var seconds: Double
}

extension ServerTests {
    /// A client that pipelines requests and never reads answers is throttled: the server
    /// stops reading once answers back up, instead of buffering them without bound.
    func testClientThatNeverReadsAnswersIsThrottled() async throws {
        let (server, path) = try await makeServer { router in
            router.register("big") { _ in .string(String(repeating: "y", count: 32 * 1024)) }
        }
        let raw = try RawSocket(path: path)
        let request = RawSocket.request(id: 1, method: "big")
        // Non-blocking sends: count how many requests the server lets in before the socket fills.
        let flags = fcntl(raw.fd, F_GETFL)
        _ = fcntl(raw.fd, F_SETFL, flags | O_NONBLOCK)
        var accepted = 0
        var stalledRounds = 0
        while accepted < 200_000 && stalledRounds < 50 {
            let n = request.withUnsafeBytes { send(raw.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n == request.count {
                accepted += 1
                stalledRounds = 0
            } else {
                stalledRounds += 1
                try await Task.sleep(nanoseconds: 20_000_000)
            }
        }
        // 200 000 answers of 32 KiB would be 6 GB; the server must have stopped reading long before.
        XCTAssertLessThan(accepted, 200_000)
        XCTAssertEqual(server.connectionCount, 1, "throttling, not disconnecting")
        await server.shutdownGracefully(timeout: .milliseconds(100))
    }
}

extension ServerTests {
    /// Requests sent in one write and answered on the spot (an unknown method, an immediate
    /// method, an invalid envelope) are flushed together at the end of the chunk read: every
    /// one is answered, in order, with its own id, and a later task's answer still follows.
    func testRequestsOfOneWriteAreAllAnsweredInOrder() async throws {
        let (server, path) = try await makeServer { router in
            router.register("now", takes: [], now: { _ in .string("now") }, later: { _ in .string("later") })
            router.register("task") { _ in .string("task") }
        }
        let raw = try RawSocket(path: path)
        var burst: [UInt8] = []
        for id in 1...60 {
            switch id % 3 {
            case 0: burst += RawSocket.request(id: id, method: "now")
            case 1: burst += RawSocket.request(id: id, method: "nope")
            default: burst += RawSocket.frame(#"{"jsonrpc":"1.0","id":\#(id),"method":"now"}"#)
            }
        }
        burst += RawSocket.request(id: 61, method: "task")
        try raw.send(burst)
        for id in 1...60 {
            let answer = try XCTUnwrap(try raw.readFrame(), "answer \(id)")
            XCTAssertEqual(answer["id"]?.intValue, id)
            switch id % 3 {
            case 0: XCTAssertEqual(answer["result"]?.stringValue, "now")
            case 1: XCTAssertEqual(answer["error"]?["data"]?["name"]?.stringValue, "MethodNotFound")
            default: XCTAssertEqual(answer["error"]?["code"]?.intValue, -32600)
            }
        }
        let last = try XCTUnwrap(try raw.readFrame())
        XCTAssertEqual(last["id"]?.intValue, 61)
        XCTAssertEqual(last["result"]?.stringValue, "task")
        await server.shutdownGracefully()
    }
}
