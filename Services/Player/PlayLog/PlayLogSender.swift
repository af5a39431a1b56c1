import Foundation
import Logging
import ServiceLifecycle
import Wire

/// Hands closed play events to the reporter (`playlog.record` on `reporter.sock`), oldest first,
/// deleting each only after the reporter answered success. When the reporter is down or
/// refuses, it tries again later with a growing pause; the `eventId` makes a re-send harmless.
final class PlayLogSender: Service, Sendable {
    let socketPath: String
    let logger: Logger
    let retryInterval: Duration
    private let store: @Sendable () async throws -> PlayLogStore
    private let wakeups: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation

    init(socketPath: String, retryInterval: Duration, logger: Logger,
         store: @escaping @Sendable () async throws -> PlayLogStore) {
        self.socketPath = socketPath
        self.retryInterval = retryInterval
        self.logger = logger
        self.store = store
        (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Try now (an event was just closed).
    func nudge() { wake.yield() }

    func run() async throws {
        await cancelWhenGracefulShutdown { await self.loop() }
    }

    private func loop() async {
        var failures = 0
        var iterator = wakeups.makeAsyncIterator()
        while !Task.isCancelled {
            let delivered = await deliverAll()
            failures = delivered ? 0 : min(failures + 1, 6)
            // 1×, 2×, 4× … up to 32× the interval after repeated failures.
            let pause = retryInterval * (1 << max(0, failures - 1))
            let timer = Task { [wake] in
                try await Task.sleep(for: pause)
                wake.yield()
            }
            _ = await iterator.next()
            timer.cancel()
        }
    }

    /// Sends everything pending; false when something is still left (reporter down or refusing).
    private func deliverAll() async -> Bool {
        guard let store = try? await store() else { return false }
        var client: RPCClient?
        defer { if let client { Task { await client.close() } } }
        while !Task.isCancelled {
            guard let batch = try? await store.pending(limit: 50), !batch.isEmpty else { return true }
            for event in batch {
                do {
                    if client == nil { client = try await RPCClient.connect(path: socketPath) }
                    _ = try await client!.call("playlog.record", ["event": event.body], timeout: .seconds(15))
                    try await store.delivered(event.eventId)
                } catch {
                    logger.debug("play event not handed over yet", metadata: ["eventId": "\(event.eventId)", "error": "\(error)"])
                    try? await store.failed(event.eventId, reason: "\(error)")
                    return false
                }
            }
        }
        return false
    }
}
