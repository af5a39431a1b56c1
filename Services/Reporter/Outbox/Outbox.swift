import Foundation
import GRDB
import NIOConcurrencyHelpers
import ServiceKit
import StateDB

/// The reporter's way into the outbox: the store once the catalog is open, the group-commit
/// writer in front of it, and whether the cap is currently refusing records.
final class Outbox: Sendable {
    private let opening: Task<OutboxStore, Error>
    /// The store once open, for the paths that must not suspend to get it.
    private let opened = NIOLockedValueBox<OutboxStore?>(nil)
    let committer: GroupCommitter
    let maxQueueBytes: Int
    private let full = NIOLockedValueBox(false)

    /// Opens lazily: the catalog opens only after READY, so this must not be awaited in `build`.
    /// `stored` runs on the committer's thread after a group in which at least one record was new.
    init(context: DaemonContext, maxQueueBytes: Int, stored: @escaping @Sendable () -> Void = {}) {
        self.maxQueueBytes = maxQueueBytes
        let opened = self.opened
        opening = Task {
            let catalog = try await context.catalog()
            let store = try await OutboxStore.open(catalog: catalog, maxQueueBytes: maxQueueBytes)
            opened.withLockedValue { $0 = store }
            return store
        }
        committer = GroupCommitter(
            commit: { records in
                // `record` waits for the store before it hands a record over.
                guard let store = opened.withLockedValue({ $0 }) else {
                    throw ReporterError(kind: .notStored, message: "The outbox is not open yet; try again.")
                }
                return try store.insertBlocking(records, at: Date())
            },
            committed: { outcomes in
                if outcomes.contains(.stored) { stored() }
            })
    }

    /// The store if it is open, without waiting for it (the health round must not wait on a
    /// catalog that is still opening).
    var openedStore: OutboxStore? { opened.withLockedValue { $0 } }

    func store() async throws -> OutboxStore {
        if let store = opened.withLockedValue({ $0 }) { return store }
        return try await opening.value
    }

    /// Stores one record durably (through the group commit). A full disk is `StorageFull`, as
    /// in every service; another storage failure `RecordNotStored`; a catalog that cannot open
    /// stays `CatalogUnavailable`.
    func record(_ record: OutboxRecord) async throws -> StoreOutcome {
        _ = try await store()
        do {
            return try await committer.store(record)
        } catch let error as StateDBError where error.code == .storageFull {
            throw error
        } catch let error as DatabaseError {
            throw ReporterError(
                kind: .notStored,
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
