import GRDB
import Pacing
import StateDB
import Synchronization

/// The download queue's own doorbell: the catalog rings it after every committed transaction
/// that made a file wanted (a `downloads` row queued by an insert or a state change, a
/// re-offline's staged revision, a file set back to be fetched again) or let a product use
/// cellular, whoever wrote it.
/// The engine follows it, so no writer of the wanted set has to remember to wake the engine.
///
/// Built from temporary triggers on the downloader's writer connection (they exist only for
/// this process and never touch the schema other releases see) that call a function of this
/// process, and a transaction observer that rings once the transaction committed: a rolled
/// back change rings nothing, and the engine never reads a queue the writer has not committed.
enum QueueSignal {
    /// Installs the triggers on the writer connection; the bell rings once per committed change
    /// (a burst of commits while the engine is busy is one wake-up).
    static func install(on catalog: StateDB) async throws -> Doorbell<Ring> {
        let bell = Doorbell<Ring>()
        let observer = Observer(ring: { bell.ring() })
        try await catalog.writeWithoutTransaction { db in
            db.add(
                function: DatabaseFunction("cassette_queue_changed", argumentCount: 0, pure: false) { _ in
                    observer.changed()
                    return nil
                })
            try db.execute(
                sql: """
                    CREATE TEMP TRIGGER IF NOT EXISTS queue_added AFTER INSERT ON main.downloads
                        WHEN NEW.state = 'queued' BEGIN SELECT cassette_queue_changed(); END;
                    CREATE TEMP TRIGGER IF NOT EXISTS queue_requeued AFTER UPDATE OF state ON main.downloads
                        WHEN NEW.state = 'queued' AND OLD.state <> 'queued' BEGIN SELECT cassette_queue_changed(); END;
                    CREATE TEMP TRIGGER IF NOT EXISTS queue_staged AFTER UPDATE OF staged ON main.offlineProducts
                        WHEN NEW.staged IS NOT NULL BEGIN SELECT cassette_queue_changed(); END;
                    CREATE TEMP TRIGGER IF NOT EXISTS queue_cellular AFTER UPDATE OF allowCellular ON main.offlineProducts
                        WHEN NEW.allowCellular BEGIN SELECT cassette_queue_changed(); END;
                    CREATE TEMP TRIGGER IF NOT EXISTS queue_now AFTER UPDATE OF downloadNow ON main.offlineProducts
                        WHEN NEW.downloadNow BEGIN SELECT cassette_queue_changed(); END;
                    CREATE TEMP TRIGGER IF NOT EXISTS queue_retried AFTER UPDATE OF attempts ON main.files
                        WHEN NEW.attempts < OLD.attempts BEGIN SELECT cassette_queue_changed(); END;
                    CREATE TEMP TRIGGER IF NOT EXISTS queue_refetched AFTER UPDATE OF state ON main.files
                        WHEN NEW.state = 'pending' AND OLD.state <> 'pending' BEGIN SELECT cassette_queue_changed(); END;
                    """)
            db.add(transactionObserver: observer, extent: .databaseLifetime)
        }
        return bell
    }

    /// Notes a trigger's call inside a transaction; rings after its commit, forgets it on rollback.
    private final class Observer: TransactionObserver, Sendable {
        private let pending = Mutex(false)
        private let ring: @Sendable () -> Void

        init(ring: @escaping @Sendable () -> Void) { self.ring = ring }

        func changed() { pending.withLock { $0 = true } }

        func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool { false }
        func databaseDidChange(with event: DatabaseEvent) {}

        func databaseDidCommit(_ db: Database) {
            if pending.withLock({
                let was = $0
                $0 = false
                return was
            }) {
                ring()
            }
        }

        func databaseDidRollback(_ db: Database) { pending.withLock { $0 = false } }
    }
}
