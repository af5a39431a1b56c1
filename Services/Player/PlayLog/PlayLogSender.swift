import Foundation
import Logging
import Pacing
import ServiceLifecycle
import Wire

/// Hands closed play events (`playlog.record` on `reporter.sock`) and metric events
/// (`metrics.record`) to the reporter, oldest first:
/// first the catalog's (`playerPlays`, each row deleted once the reporter answered success),
/// then those the catalog could not take and `PlayLogWriter` keeps in memory. When the reporter
/// is down or refuses (its disk may be full too), it tries again later with a growing pause; the
/// `eventId` makes a re-send harmless.
final class PlayLogSender: Service, Sendable {
    let logger: Logger
    let retryInterval: Duration
    private let socketPath: String
    private let store: @Sendable () async throws -> PlayLogStore
    private let writer: PlayLogWriter
    private let wakeup: Doorbell<Ring>

    init(
        socketPath: String, retryInterval: Duration, wakeup: Doorbell<Ring>, writer: PlayLogWriter, logger: Logger,
        store: @escaping @Sendable () async throws -> PlayLogStore
    ) {
        self.socketPath = socketPath
        self.retryInterval = retryInterval
        self.wakeup = wakeup
        self.writer = writer
        self.logger = logger
        self.store = store
    }

    /// Try now (an event was just closed).
    func nudge() { wakeup.ring() }

    func run() async throws {
        await cancelWhenGracefulShutdown { await self.loop() }
    }

    private func loop() async {
        var failures = 0
        // Rows the reporter has but the catalog would not let go of yet (its disk is full).
        var undeleted: Set<String> = []
        // 1×, 2×, 4× … up to 32× the interval after repeated failures.
        let backoff = Backoff(initial: retryInterval, doublings: 5)
        while !Task.isCancelled {
            let delivered = await deliverAll(undeleted: &undeleted)
            failures = delivered ? 0 : failures + 1
            await wakeup.wait(upTo: backoff.duration(afterFailures: max(1, failures)))
        }
    }

    /// Sends everything pending; false when something is still left (reporter down or refusing,
    /// or a row the catalog did not let go of).
    private func deliverAll(undeleted: inout Set<String>) async -> Bool {
        guard let store = try? await store() else { return false }
        var link = ReporterLink(socketPath: socketPath)
        let delivered = await deliverAll(from: store, link: &link, undeleted: &undeleted)
        await link.close()
        return delivered
    }

    private func deliverAll(from store: PlayLogStore, link: inout ReporterLink, undeleted: inout Set<String>) async -> Bool {
        for eventId in undeleted where (try? await store.delivered(eventId)) != nil {
            undeleted.remove(eventId)
        }
        // Taken before reading the catalog: whatever the writer stores meanwhile is in this list
        // as well, so nothing here can overtake an older event (the repeat is a duplicate).
        let inMemory = await writer.closedEvents()
        var position: PlayLogStore.Position?
        while !Task.isCancelled {
            guard let batch = try? await store.pending(after: position, limit: 50) else { return false }
            if batch.isEmpty { break }
            for event in batch {
                position = event.position
                guard let body = event.body, !undeleted.contains(event.eventId) else { continue }
                do {
                    try await link.record(event.kind, body)
                } catch {
                    logger.debug("play event not handed over yet", metadata: ["eventId": "\(event.eventId)", "error": "\(error)"])
                    try? await store.failed(event.eventId, reason: "\(error)")
                    return false
                }
                do {
                    try await store.delivered(event.eventId)
                } catch {
                    undeleted.insert(event.eventId)
                }
            }
        }
        // Only after the catalog's: the writer's backlog is younger than every stored close.
        for event in inMemory {
            do {
                try await link.record(event.kind, event.json)
                await writer.handedOver(event.eventId)
            } catch {
                logger.debug("play event kept in memory not handed over yet", metadata: ["eventId": "\(event.eventId)", "error": "\(error)"])
                return false
            }
        }
        return undeleted.isEmpty && !Task.isCancelled
    }
}
