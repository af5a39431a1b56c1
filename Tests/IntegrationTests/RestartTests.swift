import Foundation
import Glibc
import TestSupport
import Wire
import XCTest

/// Per-service restarts the way systemd does them: the listening socket outlives the
/// service, so clients that connect while it is down wait in the backlog and are answered by the
/// next instance. A test supervisor holds the socket; no systemd manager runs.
final class RestartTests: XCTestCase {
    func testDownloaderKilledWhileClientsSendAnswersEveryQueuedRequestAfterRestart() throws {
        try killAndRestartUnderLoad("downloader")
    }

    func testPlayerKilledWhileClientsSendAnswersEveryQueuedRequestAfterRestart() throws {
        try killAndRestartUnderLoad("player", extraArgs: ["--audio-device", "null"])
    }

    func testReporterKilledWhileClientsSendAnswersEveryQueuedRequestAfterRestart() throws {
        try killAndRestartUnderLoad("reporter")
    }

    private func killAndRestartUnderLoad(_ name: String, extraArgs: [String] = []) throws {
        let dir = try TestDirectory(prefix: "rs")
        defer { dir.remove() }
        let supervisor = try SocketSupervisor(name, in: dir, extraArgs: extraArgs)
        XCTAssertTrue(try supervisor.start().wait(for: "READY=1"), supervisor.log)

        let record = Outcomes()
        let socketPath = supervisor.socketPath
        let clients = (0..<4).map { n in
            Thread {
                var id = n * 1_000_000
                while !record.stopped {
                    id += 1
                    record.exchange(path: socketPath, id: id)
                }
            }
        }
        clients.forEach { $0.start() }
        usleep(800_000)
        let killedAt = Date()
        supervisor.kill9()
        usleep(1_000_000) // down for a second: clients keep connecting and sending
        let restartedAt = Date()
        XCTAssertTrue(try supervisor.start().wait(for: "READY=1"), supervisor.log)
        usleep(800_000)
        record.stop()
        while clients.contains(where: { !$0.isFinished }) { usleep(10_000) }

        let results = record.all
        let refused = results.filter { $0.kind == .refused }
        let lost = results.filter { $0.kind == .lost }
        let queued = results.filter { $0.kind == .answered && $0.sentAt > killedAt && $0.sentAt < restartedAt }
        print(
            "restart \(name): \(results.count) requests, \(queued.count) sent while down and answered after the restart, "
                + "\(lost.count) lost with the killed process, \(refused.count) refused")
        XCTAssertEqual(refused.count, 0, "connections refused while the socket was held")
        // Only requests the killed process had already taken may die with it; nothing sent after the kill.
        XCTAssertEqual(
            lost.filter { $0.sentAt > killedAt.addingTimeInterval(0.05) }.count, 0,
            "requests sent after the kill were lost")
        XCTAssertGreaterThan(queued.count, 0, "requests sent while the service was down were answered after the restart")
        XCTAssertTrue(queued.allSatisfy { $0.answeredAt! >= restartedAt })
        XCTAssertGreaterThan(results.filter { $0.kind == .answered && $0.sentAt > restartedAt }.count, 0)
        XCTAssertEqual(try supervisor.stop(), 0, supervisor.log)
    }
}

/// What each client exchange came to, shared by the client threads.
private final class Outcomes: @unchecked Sendable {
    enum Kind { case answered, refused, lost }
    struct Exchange {
        var kind: Kind
        var sentAt: Date
        var answeredAt: Date?
    }

    private let lock = NSLock()
    private var exchanges: [Exchange] = []
    private var stopFlag = false

    var stopped: Bool { lock.withLock { stopFlag } }
    var all: [Exchange] { lock.withLock { exchanges } }
    func stop() { lock.withLock { stopFlag = true } }

    /// One request on a new connection, as an app that reconnects per call would send it.
    func exchange(path: String, id: Int) {
        let sentAt = Date()
        let socket: RawSocket
        do {
            socket = try RawSocket(path: path)
        } catch {
            append(Exchange(kind: .refused, sentAt: sentAt))
            usleep(10_000)
            return
        }
        do {
            try socket.send(RawSocket.request(id: id, method: "service.status"))
            if let answer = try socket.readFrame(timeout: 30), answer["id"]?.intValue == id, answer["result"] != nil {
                append(Exchange(kind: .answered, sentAt: sentAt, answeredAt: Date()))
            } else {
                append(Exchange(kind: .lost, sentAt: sentAt))
            }
        } catch {
            append(Exchange(kind: .lost, sentAt: sentAt))
        }
    }

    private func append(_ exchange: Exchange) { lock.withLock { exchanges.append(exchange) } }
}
