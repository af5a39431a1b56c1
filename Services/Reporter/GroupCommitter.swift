import Foundation

/// The one writer of new records, on a thread of its own. Every caller waits for a durable
/// commit, but callers arriving while a commit is on disk do not each pay for an fsync: the
/// next transaction takes everyone who is waiting at that moment, then answers each of them.
/// With one client this is one record per transaction; with many, the fsync is shared.
///
/// Why a thread and not an actor over the catalog's async writes: a record's answer is what
/// the client waits for, and every hand-off between threads costs a wake-up (tens of
/// microseconds on a small device, several times SQLite's own insert and fsync). Here a
/// record crosses two: from the connection's event loop to this thread, which runs the
/// transaction itself (the blocking catalog call on a dedicated thread, as the threads rule
/// allows) and resumes the waiting request, which continues on its event loop. Through an
/// actor and GRDB's writer queue it crossed four (loop → cooperative pool → writer queue →
/// pool → loop). The thread is started by the first record and lives as long as the process.
final class GroupCommitter: @unchecked Sendable {
    /// Runs on the committer's thread and may block (it commits with synchronous=FULL).
    typealias Commit = @Sendable ([OutboxRecord]) throws -> [StoreOutcome]
    /// Runs on the committer's thread after a group's callers were answered.
    typealias Committed = @Sendable ([StoreOutcome]) -> Void

    private typealias Waiter = (record: OutboxRecord, answer: CheckedContinuation<StoreOutcome, Error>)

    private let commit: Commit
    private let committed: Committed
    /// Records per transaction at most, so one huge burst does not hold the writer for long.
    private let maxGroup: Int
    private let name: String
    private let condition = NSCondition()
    /// Guarded by `condition`.
    private var waiting: [Waiter] = []
    private var started = false
    private var sleeping = false

    init(maxGroup: Int = 1000, name: String = "reporter.commit", commit: @escaping Commit,
         committed: @escaping Committed = { _ in }) {
        self.maxGroup = maxGroup
        self.name = name
        self.commit = commit
        self.committed = committed
    }

    /// Returns once `record` is durable (or known, or refused at the cap).
    func store(_ record: OutboxRecord) async throws -> StoreOutcome {
        try await withCheckedThrowingContinuation { continuation in
            condition.lock()
            waiting.append((record, continuation))
            let start = !started
            started = true
            // Signalled only when the thread waits: one that is committing takes the record
            // with its next group without a wake-up. Signalled after unlocking, so the thread
            // does not wake only to wait for the lock.
            let wake = sleeping
            sleeping = false
            condition.unlock()
            if start {
                let thread = Thread { [self] in run() }
                thread.name = name
                thread.start()
            } else if wake {
                condition.signal()
            }
        }
    }

    private func run() {
        while true {
            condition.lock()
            while waiting.isEmpty {
                sleeping = true
                condition.wait()
            }
            sleeping = false
            let group = Array(waiting.prefix(maxGroup))
            waiting.removeFirst(group.count)
            condition.unlock()
            do {
                let outcomes = try commit(group.map(\.record))
                for (index, entry) in group.enumerated() {
                    if index < outcomes.count {
                        entry.answer.resume(returning: outcomes[index])
                    } else {
                        entry.answer.resume(throwing: ReporterError(kind: .notStored, message: "The record was not written; try again."))
                    }
                }
                committed(outcomes)
            } catch {
                for entry in group { entry.answer.resume(throwing: error) }
            }
        }
    }
}
