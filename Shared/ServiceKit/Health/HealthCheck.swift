import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import StateDB
import Wire

/// One round trip through each part whose stall would wedge a service: an event loop (every
/// socket), Swift's cooperative pool (every actor and task) and, once it is open, the catalog
/// through its async API (GRDB's reader and writer queues). The watchdog pings only after a
/// check that passed, so a service stuck in any of them stops pinging and systemd restarts it;
/// `HealthMonitor` runs it in each health round, and `service.status` shows the figures of the
/// most recent one.
///
/// The three parts are probed at once, under one deadline whose timer is cancelled as soon as
/// they have all answered. Callers that ask while a check is running share its report instead
/// of starting another (the watchdog's round and the background one may meet).
struct HealthCheck: Sendable {
    /// Past this, a part counts as stalled (and the check answers rather than wait on).
    static let deadline: Duration = .seconds(2)
    let catalog: OpenedCatalog
    private let round = SharedRound()

    init(catalog: OpenedCatalog) {
        self.catalog = catalog
    }

    struct Report: Sendable {
        let healthy: Bool
        /// Which part stalled, for the health verdict's words.
        let stalledEventLoop: Bool
        let stalledCooperativePool: Bool
        let stalledCatalog: Bool
        /// When the check finished.
        let at = ContinuousClock.now
        /// The members that do not change with the report's age, made once: `service.status`
        /// shows the same report many times.
        private let members: [String: JSONValue]

        /// Each part's time to answer, nil when it stalled; `catalog` nil while the catalog is
        /// not open yet (then it is not checked).
        init(eventLoop: Duration?, cooperativePool: Duration?, catalog: Duration??) {
            func ms(_ d: Duration?) -> JSONValue { d.map { .number($0.roundedMilliseconds) } ?? "stalled" }
            stalledEventLoop = eventLoop == nil
            stalledCooperativePool = cooperativePool == nil
            stalledCatalog = catalog.map { $0 == nil } ?? false
            healthy = !stalledEventLoop && !stalledCooperativePool && !stalledCatalog
            var members: [String: JSONValue] = Dictionary(minimumCapacity: 5)
            members["healthy"] = .bool(healthy)
            members["eventLoopMs"] = ms(eventLoop)
            members["cooperativePoolMs"] = ms(cooperativePool)
            if let catalog { members["catalogMs"] = ms(catalog) }
            self.members = members
        }

        var json: JSONValue {
            var fields = members
            fields["checkedMsAgo"] = .number((ContinuousClock.now - at).roundedMilliseconds)
            return .object(fields)
        }
    }

    /// The report of a check that was running when called, or else of a new one.
    func run() async -> Report {
        while true {
            switch round.join() {
            case .leader:
                let report = await Self.probe(catalog.value)
                round.finish(report)
                return report
            case .follower:
                if let report = await round.wait() { return report }
            // The round ended between `join` and `wait`: start or join the next one.
            }
        }
    }

    /// Probes the event loop, the cooperative pool and the catalog at once; each part's figure is
    /// the time from the start until it ran the probe, or nil when it failed or took longer than
    /// `deadline` (a stalled part is not waited for: it may never answer).
    ///
    /// Called on an event loop (a request's task runs on its connection's loop), the probe uses
    /// that loop, and the deadline is a timer of that loop: arming and cancelling it there costs
    /// no thread wake-up, and a caller waiting on a loop could not be answered by a stalled loop
    /// anyway. Elsewhere (the watchdog) the deadline is a sleeping task.
    private static func probe(_ catalog: StateDB?) async -> Report {
        let start = ContinuousClock.now
        let parts = ProbeParts(expected: catalog == nil ? 2 : 3, catalogChecked: catalog != nil)
        let current = MultiThreadedEventLoopGroup.currentEventLoop
        let timer = NIOLockedValueBox<(() -> Void)?>(nil)
        let report = await withCheckedContinuation { continuation in
            parts.begin(continuation)
            // The catalog first: two hops through GRDB's queues, the longest of the three.
            catalog?.probe { ok in
                parts.set(.catalog, ok ? ContinuousClock.now - start : nil)
            }
            // A new task queued on the global executor: it runs only if a pool thread is free.
            Task.detached {
                parts.set(.cooperativePool, ContinuousClock.now - start)
            }
            if let current {
                let scheduled = current.scheduleTask(in: TimeAmount(deadline)) {
                    parts.expire()
                }
                timer.withLockedValue { $0 = { scheduled.cancel() } }
            } else {
                let sleeper = Task.detached {
                    try? await Task.sleep(for: deadline)
                    parts.expire()
                }
                timer.withLockedValue { $0 = { sleeper.cancel() } }
            }
            // Last: on the caller's own loop it runs once this task suspends.
            (current ?? MultiThreadedEventLoopGroup.singleton.any()).execute {
                parts.set(.eventLoop, ContinuousClock.now - start)
            }
        }
        timer.withLockedValue { $0 }?()
        return report
    }
}

/// Collects one probe's answers and resumes its caller once, when all arrived or at the deadline.
private final class ProbeParts: Sendable {
    struct State {
        var eventLoop: Duration?
        var cooperativePool: Duration?
        var catalogTime: Duration?
        var pending: Int
        var continuation: CheckedContinuation<HealthCheck.Report, Never>?
        var done = false
    }
    private let state: NIOLockedValueBox<State>
    private let catalogChecked: Bool

    init(expected: Int, catalogChecked: Bool) {
        state = NIOLockedValueBox(State(pending: expected))
        self.catalogChecked = catalogChecked
    }

    func begin(_ continuation: CheckedContinuation<HealthCheck.Report, Never>) {
        state.withLockedValue { $0.continuation = continuation }
    }

    enum Part { case eventLoop, cooperativePool, catalog }

    func set(_ part: Part, _ value: Duration?) {
        complete { s in
            guard !s.done else { return false }
            switch part {
            case .eventLoop: s.eventLoop = value
            case .cooperativePool: s.cooperativePool = value
            case .catalog: s.catalogTime = value
            }
            s.pending -= 1
            return s.pending == 0
        }
    }

    /// The deadline passed: the parts that have not answered count as stalled.
    func expire() {
        complete { s in !s.done }
    }

    private func complete(_ update: (inout State) -> Bool) {
        let finished = state.withLockedValue { s -> (CheckedContinuation<HealthCheck.Report, Never>, HealthCheck.Report)? in
            guard update(&s), let continuation = s.continuation else { return nil }
            s.done = true
            s.continuation = nil
            let report = HealthCheck.Report(
                eventLoop: s.eventLoop, cooperativePool: s.cooperativePool,
                catalog: catalogChecked ? .some(s.catalogTime) : nil)
            return (continuation, report)
        }
        guard let (continuation, report) = finished else { return }
        continuation.resume(returning: report)
    }
}

/// At most one check at a time: the first caller runs it, the others wait for its report.
private final class SharedRound: Sendable {
    enum Role { case leader, follower }
    /// nil when no check runs; else the callers waiting for the running one.
    private let waiters = NIOLockedValueBox<[CheckedContinuation<HealthCheck.Report?, Never>]?>(nil)
    private let lastReport = NIOLockedValueBox<HealthCheck.Report?>(nil)

    /// The report of the last check that finished.
    var last: HealthCheck.Report? { lastReport.withLockedValue { $0 } }

    func join() -> Role {
        waiters.withLockedValue { w in
            if w == nil {
                w = []
                return .leader
            }
            return .follower
        }
    }

    /// The running check's report; nil when it ended before this caller was registered.
    func wait() async -> HealthCheck.Report? {
        await withCheckedContinuation { continuation in
            let registered = waiters.withLockedValue { w -> Bool in
                guard w != nil else { return false }
                w!.append(continuation)
                return true
            }
            if !registered { continuation.resume(returning: nil) }
        }
    }

    func finish(_ report: HealthCheck.Report) {
        lastReport.withLockedValue { $0 = report }
        let waiting = waiters.withLockedValue { w in
            defer { w = nil }
            return w ?? []
        }
        waiting.forEach { $0.resume(returning: report) }
    }
}

/// The catalog once `CatalogOpener` has opened it; nil before (and when it could not open,
/// then `failure` says why).
final class OpenedCatalog: Sendable {
    private let box = NIOLockedValueBox<StateDB?>(nil)
    private let failureBox = NIOLockedValueBox<String?>(nil)
    var value: StateDB? { box.withLockedValue { $0 } }
    var failure: String? { failureBox.withLockedValue { $0 } }
    func set(_ catalog: StateDB) { box.withLockedValue { $0 = catalog } }
    func fail(_ error: any Error) { failureBox.withLockedValue { $0 = "\(error)" } }
}
