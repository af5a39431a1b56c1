import Foundation
import Logging
import NIOConcurrencyHelpers
import Pacing
import Wire

/// The one writer of play and metric events into `playerPlays`, in the order the engine made them.
///
/// A write the catalog refuses (disk full, busy, locked) is never dropped: the event stays in
/// memory (`PlayBacklog`, where progress saves of an open play coalesce) and is written again
/// later, head first, so the catalog's order stays the engine's. Meanwhile `PlayLogSender` hands
/// the backlog's closed events straight to the reporter; whichever stores one first wins, and
/// the `eventId` makes the other copy a harmless duplicate. A full disk is logged once per
/// episode, and the backlog shows in `service.status` (`playLog`).
actor PlayLogWriter {
    private let store: @Sendable () async throws -> PlayLogStore
    private let retryInterval: Duration
    private let logger: Logger
    private let reporterSocket: String
    /// Rings the sender: a close was stored, or the catalog refused and the reporter may take it.
    private let sender: Doorbell<Ring>
    private let wakeup = Doorbell<Ring>()
    private var backlog = PlayBacklog() { didSet { publishStatus() } }
    private var trouble: PlayStoreTrouble? { didSet { publishStatus() } }
    /// `status()`'s figures, kept current on every change so `service.status` reads them without
    /// a hop onto this actor.
    private let statusSnapshot = NIOLockedValueBox<JSONValue>(PlayLogWriter.status(backlog: PlayBacklog(), trouble: nil))
    private var inputEnded = false
    /// Backlog entries written in one transaction at most.
    static let maxGroup = 64
    private var leftoversClosed = false

    init(
        store: @escaping @Sendable () async throws -> PlayLogStore, retryInterval: Duration, reporterSocket: String,
        sender: Doorbell<Ring>, logger: Logger
    ) {
        self.store = store
        self.retryInterval = retryInterval
        self.reporterSocket = reporterSocket
        self.sender = sender
        self.logger = logger
    }

    /// Applies `writes` until the stream ends (shutdown), then keeps trying — the catalog, then
    /// the reporter — for at most `shutdownGrace` before the process may exit.
    nonisolated func run(_ writes: AsyncStream<PlayWrite>, shutdownGrace: Duration = .seconds(5)) async {
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await write in writes { await self.enqueue(write) }
                await self.endInput()
            }
            group.addTask { await self.drain(shutdownGrace: shutdownGrace) }
        }
    }

    private nonisolated func drain(shutdownGrace: Duration) async {
        var failures = 0
        // 1×, 2×, 4×, 8× the interval while the catalog keeps refusing.
        let backoff = Backoff(initial: retryInterval, doublings: 3)
        var deadline: ContinuousClock.Instant?
        while true {
            let stored = await flush()
            failures = stored ? 0 : failures + 1
            let pause = backoff.duration(afterFailures: max(1, failures))
            guard await inputEnded else {
                // Still in trouble with nothing left to write (the reporter took it): keep an eye
                // on the catalog anyway, as new writes do not ring while it refuses.
                let healthy = await trouble == nil
                await wakeup.wait(upTo: stored && healthy ? nil : pause)
                continue
            }
            if stored { return }
            let limit = deadline ?? .now + shutdownGrace
            deadline = limit
            if await handOverAll() { return }
            guard .now < limit, !Task.isCancelled else { return await giveUp() }
            await wakeup.wait(upTo: min(pause, ContinuousClock.now.duration(to: limit)))
        }
    }

    private func enqueue(_ write: PlayWrite) {
        backlog.add(write)
        if trouble == nil { wakeup.ring() }
    }

    private func endInput() {
        inputEnded = true
        wakeup.ring()
    }

    /// Writes the backlog head first; true once it is empty, false at the first refusal.
    private func flush() async -> Bool {
        var wrote = false
        do {
            let store = try await store()
            if !leftoversClosed {
                let closed = try await store.closeLeftovers()
                leftoversClosed = true
                wrote = true
                if closed > 0 {
                    logger.info("closed play events left open by the previous run", metadata: ["count": "\(closed)"])
                }
                sender.ring()
            }
            // Head first, a group per transaction: a play's close and its session's metric events
            // (or a burst of closes) cost one commit, not one each.
            while !backlog.isEmpty {
                let group = Array(backlog.entries.prefix(Self.maxGroup))
                try await store.apply(group)
                var closed = false
                for entry in group {
                    backlog.applied(entry)
                    if case .save(_, let closing) = entry.change {
                        wrote = true
                        closed = closed || closing
                    }
                }
                if closed { sender.ring() }
            }
        } catch {
            note(error)
            return false
        }
        if wrote { recovered() }
        return true
    }

    private func note(_ error: any Error) {
        let now = PlayStoreTrouble(error)
        if trouble?.name != now.name {
            if now.isStorageFull {
                logger.error(
                    "cannot store play events: the catalog's disk is full. They are kept in memory and handed to the reporter; nothing is dropped",
                    metadata: ["inMemory": "\(backlog.plays)"])
            } else {
                logger.warning(
                    "cannot store play events yet; they are kept in memory and retried",
                    metadata: ["error": "\(now)", "inMemory": "\(backlog.plays)"])
            }
        }
        trouble = now
        // The reporter may have room (or be reachable) where the catalog has not.
        if !backlog.closedEvents.isEmpty { sender.ring() }
    }

    private func recovered() {
        guard let trouble else { return }
        logger.notice("play events are stored again", metadata: ["after": "\(trouble.name)"])
        self.trouble = nil
    }

    // MARK: Hand-over (used by PlayLogSender, and here at shutdown)

    /// Closed events durable nowhere yet, oldest first.
    func closedEvents() -> [ReportRecord] { backlog.closedEvents }

    /// The reporter stored `eventId`: it no longer needs the catalog (its row, if any, goes later).
    func handedOver(_ eventId: String) { backlog.handedOver(eventId) }

    /// At shutdown: hands every closed event the catalog would not take to the reporter itself
    /// (the sender may have stopped already). True when no play is left in memory.
    private func handOverAll() async -> Bool {
        var link = ReporterLink(socketPath: reporterSocket)
        for event in backlog.closedEvents {
            do {
                try await link.record(event.kind, event.json)
                backlog.handedOver(event.eventId)
            } catch {
                logger.debug("reporter did not take a play event at shutdown", metadata: ["eventId": "\(event.eventId)", "error": "\(error)"])
                break
            }
        }
        await link.close()
        return backlog.plays == 0 && backlog.metrics == 0
    }

    /// Out of time at shutdown with neither the catalog nor the reporter storing: the events go
    /// to the log whole, the last place left.
    private func giveUp() {
        for entry in backlog.entries {
            guard case .save(let record, _) = entry.change else { continue }
            let body = String(decoding: JSONCoding.data(record.json), as: UTF8.self)
            logger.critical(
                "play event lost at exit: neither the catalog nor the reporter could store it",
                metadata: ["eventId": "\(record.eventId)", "event": "\(body)", "error": "\(trouble?.description ?? "-")"])
        }
    }

    // MARK: Status

    /// `service.status` → `playLog`.
    nonisolated func status() -> JSONValue {
        statusSnapshot.withLockedValue { $0 }
    }

    private func publishStatus() {
        let now = Self.status(backlog: backlog, trouble: trouble)
        statusSnapshot.withLockedValue { $0 = now }
    }

    private static func status(backlog: PlayBacklog, trouble: PlayStoreTrouble?) -> JSONValue {
        [
            "inMemory": .number(Double(backlog.plays)),
            "closedInMemory": .number(Double(backlog.closedPlays)),
            "metricsInMemory": .number(Double(backlog.metrics)),
            "storageFull": .bool(trouble?.isStorageFull ?? false),
            "storeError": trouble.map { .string($0.description) } ?? .null,
        ]
    }
}
