import BlockingIO
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
final class GroupCommitter: Sendable {
    /// Runs on the committer's thread and may block (it commits with synchronous=FULL).
    typealias Commit = @Sendable ([OutboxRecord]) throws -> [StoreOutcome]
    /// Runs on the committer's thread after a group's callers were answered.
    typealias Committed = @Sendable ([StoreOutcome]) -> Void

    private typealias Waiter = (record: OutboxRecord, answer: CheckedContinuation<StoreOutcome, Error>)

    private let worker: OrderedWorker<Waiter>

    /// - Parameter maxGroup: records per transaction at most, so one huge burst does not hold
    ///   the writer for long.
    init(
        maxGroup: Int = 1000, name: String = "reporter.commit", commit: @escaping Commit,
        committed: @escaping Committed = { _ in }
    ) {
        worker = OrderedWorker(name: name, maxBatch: maxGroup, startsLazily: true) { group in
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

    /// Returns once `record` is durable (or known, or refused at the cap).
    func store(_ record: OutboxRecord) async throws -> StoreOutcome {
        try await withCheckedThrowingContinuation { continuation in
            worker.submit((record, continuation))
        }
    }
}
