import Catalog
import Foundation
import GRDB
import NIOConcurrencyHelpers
import ServiceKit

/// The reporter's way into the outbox: the store once the catalog is open, the group-commit
/// writer in front of it, and whether the cap is currently refusing records.
final class Outbox: Sendable {
    private let opening: Task<OutboxStore, Error>
    let committer: GroupCommitter
    let maxQueueBytes: Int
    private let full = NIOLockedValueBox(false)

    /// Opens lazily: the catalog opens only after READY, so this must not be awaited in `build`.
    init(context: DaemonContext, maxQueueBytes: Int) {
        self.maxQueueBytes = maxQueueBytes
        let opening = Task {
            let catalog = try await context.catalog()
            return try await OutboxStore.open(catalog: catalog, maxQueueBytes: maxQueueBytes)
        }
        self.opening = opening
        committer = GroupCommitter { records in
            try await opening.value.insert(records, at: Date())
        }
    }

    func store() async throws -> OutboxStore {
        try await opening.value
    }

    /// Stores one record durably (through the group commit). A full disk is `StorageFull`, as
    /// in every service; another storage failure `RecordNotStored`; a catalog that cannot open
    /// stays `CatalogUnavailable`.
    func record(_ record: OutboxRecord) async throws -> StoreOutcome {
        _ = try await store()
        do {
            return try await committer.store(record)
        } catch let error as CatalogError where error.code == .storageFull {
            throw error
        } catch let error as DatabaseError {
            throw ReporterError(kind: .notStored,
                                message: "The record could not be written to the catalog (\(error.resultCode)): keep it and try again. \(error.message ?? "")")
        }
    }

    var isFull: Bool { full.withLockedValue { $0 } }

    /// Marks the queue full; true when it was not already (publish `QueueFull` once).
    func noteRefused() -> Bool {
        full.withLockedValue { wasFull in
            defer { wasFull = true }
            return !wasFull
        }
    }

    /// After delivery freed space: true when the queue was full and now takes records again.
    func noteFreed(pendingBytes: Int) -> Bool {
        full.withLockedValue { isFull in
            guard isFull, pendingBytes < maxQueueBytes else { return false }
            isFull = false
            return true
        }
    }
}
