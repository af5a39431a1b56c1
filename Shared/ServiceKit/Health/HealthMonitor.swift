import Foundation
import NIOConcurrencyHelpers
import ServiceLifecycle
import StateDB

/// The health gate's verdict, checked in the background: every `interval` by `HealthMonitorService`
/// and before every watchdog ping. A round runs the stall probe (`HealthCheck`), reads the
/// catalog's migrations from the file, asks the service whether it is wedged and what else is
/// wrong with it (`DaemonParts.healthProblems`), and keeps the verdict for `service.status`,
/// which shows the most recent one with its age instead of running a check per call.
final class HealthMonitor: Sendable {
    /// How often the background round runs: a verdict is at most this old (plus a round's time).
    static let interval: Duration = .seconds(5)

    let probe: HealthCheck
    private let opened: OpenedCatalog
    private let problems: (@Sendable () async -> [String])?
    private let wedged: (@Sendable () async -> String?)?
    private let latestBox = NIOLockedValueBox<HealthVerdict?>(nil)

    init(
        probe: HealthCheck, opened: OpenedCatalog, problems: (@Sendable () async -> [String])?,
        wedged: (@Sendable () async -> String?)?
    ) {
        self.probe = probe
        self.opened = opened
        self.problems = problems
        self.wedged = wedged
    }

    /// The most recent verdict; nil before the first round ended.
    var latest: HealthVerdict? { latestBox.withLockedValue { $0 } }

    /// The most recent verdict, or a new one when there is none yet.
    func latestOrCheck() async -> HealthVerdict {
        if let latest { return latest }
        return await check()
    }

    /// One round; the verdict becomes the latest.
    @discardableResult
    func check() async -> HealthVerdict {
        let report = await probe.run()
        var found: [String] = []
        if report.stalledEventLoop { found.append("event loop stalled (no answer within \(HealthCheck.deadline))") }
        if report.stalledCooperativePool { found.append("task pool stalled (no answer within \(HealthCheck.deadline))") }
        if let catalog = opened.value {
            if report.stalledCatalog {
                found.append("catalog stalled (no answer within \(HealthCheck.deadline))")
            } else if let problem = await catalog.schemaProblem() {
                found.append(problem)
            }
        } else if let failure = opened.failure {
            found.append("catalog unavailable: \(failure)")
        } else {
            found.append("catalog not open yet")
        }
        let wedgedReason = await wedged?()
        if let wedgedReason { found.append("wedged: \(wedgedReason)") }
        if let problems { found += await problems() }
        let verdict = HealthVerdict(problems: found, probe: report, wedged: wedgedReason)
        latestBox.withLockedValue { latest in
            // Two rounds may overlap (the watchdog's and the background one): keep the newer.
            if latest.map({ $0.at <= verdict.at }) ?? true { latest = verdict }
        }
        return verdict
    }
}

/// Runs `HealthMonitor` rounds for the life of the daemon: the first once the catalog has
/// opened or failed to (so the first verdict is about the service as it runs, not as it
/// starts), then every `HealthMonitor.interval`.
struct HealthMonitorService: Service {
    let monitor: HealthMonitor
    let ready: ReadyGate
    let catalog: Task<StateDB, Error>

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                await ready.wait()
                _ = try? await catalog.value
                while !Task.isCancelled {
                    await monitor.check()
                    try await Task.sleep(for: HealthMonitor.interval)
                }
            }
            try await gracefulShutdown()
        } catch is CancellationError {
            // The group is stopping.
        }
    }
}
