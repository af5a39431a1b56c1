import Foundation

/// The one writer of new records. Every caller waits for a durable commit, but callers
/// arriving while a commit is on disk do not each pay for an fsync: the next transaction
/// takes everyone who is waiting at that moment, then answers each of them. With one
/// client this is one record per transaction; with many, the fsync is shared.
actor GroupCommitter {
    typealias Commit = @Sendable ([OutboxRecord]) async throws -> [StoreOutcome]

    private let commit: Commit
    private var waiting: [(record: OutboxRecord, answer: CheckedContinuation<StoreOutcome, Error>)] = []
    private var committing = false
    /// Records per transaction at most, so one huge burst does not hold the writer for long.
    private let maxGroup: Int

    init(maxGroup: Int = 1000, commit: @escaping Commit) {
        self.maxGroup = maxGroup
        self.commit = commit
    }

    /// Returns once `record` is durable (or known, or refused at the cap).
    func store(_ record: OutboxRecord) async throws -> StoreOutcome {
        try await withCheckedThrowingContinuation { continuation in
            waiting.append((record, continuation))
            if !committing {
                committing = true
                Task { await self.drain() }
            }
        }
    }

    private func drain() async {
        while !waiting.isEmpty {
            let group = Array(waiting.prefix(maxGroup))
            waiting.removeFirst(group.count)
            do {
                let outcomes = try await commit(group.map(\.record))
                for (entry, outcome) in zip(group, outcomes) { entry.answer.resume(returning: outcome) }
            } catch {
                for entry in group { entry.answer.resume(throwing: error) }
            }
        }
        committing = false
    }
}
