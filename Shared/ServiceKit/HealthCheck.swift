import Catalog
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Wire

/// One round trip through each part whose stall would wedge a service: an event loop (every
/// socket), Swift's cooperative pool (every actor and task) and, once it is open, the catalog
/// through its async API (GRDB's reader and writer queues). The watchdog pings only after a
/// check that passed, so a service stuck in any of them stops pinging and systemd restarts it;
/// `service.status` shows the same figures.
struct HealthCheck: Sendable {
    /// Past this, a part counts as stalled (and the check answers rather than wait on).
    static let deadline: Duration = .seconds(2)

    let catalog: OpenedCatalog

    struct Report: Sendable {
        var eventLoop: Duration?
        var cooperativePool: Duration?
        /// nil while the catalog is not open yet (then it is not checked).
        var catalog: Duration??

        var healthy: Bool { eventLoop != nil && cooperativePool != nil && (catalog.map { $0 != nil } ?? true) }

        var json: JSONValue {
            func ms(_ d: Duration?) -> JSONValue {
                guard let d else { return "stalled" }
                return .number((Double(d.components.attoseconds) / 1e15 + Double(d.components.seconds) * 1000).rounded(toPlaces: 3))
            }
            var fields: [String: JSONValue] = ["healthy": .bool(healthy), "eventLoopMs": ms(eventLoop),
                                               "cooperativePoolMs": ms(cooperativePool)]
            if let catalog { fields["catalogMs"] = ms(catalog) }
            return .object(fields)
        }
    }

    func run() async -> Report {
        let eventLoop = await Self.timed {
            try await MultiThreadedEventLoopGroup.singleton.any().submit { () }.get()
        }
        // A new task queued on the global executor: it runs only if a pool thread is free.
        let pool = await Self.timed { await Task.detached {}.value }
        var report = Report(eventLoop: eventLoop, cooperativePool: pool, catalog: nil)
        if let opened = catalog.value {
            report.catalog = .some(await Self.timed { _ = try await opened.read { db in try Int.fetchOne(db, sql: "SELECT 1") } })
        }
        return report
    }

    /// How long `body` took, or nil when it failed or did not finish within `deadline`. The
    /// body is not waited for past the deadline (a stalled part may never return).
    private static func timed(_ body: @escaping @Sendable () async throws -> Void) async -> Duration? {
        let start = ContinuousClock.now
        let outcome = NIOLockedValueBox<CheckedContinuation<Duration?, Never>?>(nil)
        return await withCheckedContinuation { continuation in
            outcome.withLockedValue { $0 = continuation }
            func finish(_ value: Duration?) {
                outcome.withLockedValue { pending in
                    pending?.resume(returning: value)
                    pending = nil
                }
            }
            Task {
                let ok = (try? await body()) != nil
                finish(ok ? ContinuousClock.now - start : nil)
            }
            Task {
                try? await Task.sleep(for: deadline)
                finish(nil)
            }
        }
    }
}

/// The catalog once `CatalogOpener` has opened it; nil before (and when it could not open).
final class OpenedCatalog: Sendable {
    private let box = NIOLockedValueBox<Catalog?>(nil)
    var value: Catalog? { box.withLockedValue { $0 } }
    func set(_ catalog: Catalog) { box.withLockedValue { $0 = catalog } }
}
