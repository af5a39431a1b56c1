import Foundation
import Wire

/// One health verdict: whether the service is fit to keep and, if not, each problem in words
/// (what `cassettectl health` prints), with the stall probe's figures it was based on.
/// `service.status` shows the most recent one under `health`, with its age.
struct HealthVerdict: Sendable {
    let problems: [String]
    /// The stall probe of the same round (the figures the watchdog goes by).
    let probe: HealthCheck.Report
    /// Wedged by the service's own account (`DaemonParts.wedged`): the watchdog withholds its ping.
    let wedged: String?
    /// When the round finished, by the device clock (shown) and the boot clock (its age).
    let checkedAt: Date
    let at: ContinuousClock.Instant
    /// The members that do not change with age, made once: `service.status` shows one verdict many times.
    private let members: [String: JSONValue]

    var ok: Bool { problems.isEmpty }
    /// What the watchdog pings on: no stall and not wedged. A service that is up but unfit
    /// (an audio device missing) keeps its pings: restarting it would not bring the device.
    var alive: Bool { probe.healthy && wedged == nil }

    init(problems: [String], probe: HealthCheck.Report, wedged: String?, checkedAt: Date = Date(), at: ContinuousClock.Instant = .now) {
        self.problems = problems
        self.probe = probe
        self.wedged = wedged
        self.checkedAt = checkedAt
        self.at = at
        var members: [String: JSONValue]
        if case .object(let figures) = probe.json { members = figures } else { members = [:] }
        members["ok"] = .bool(problems.isEmpty)
        members["problems"] = .array(problems.map { .string($0) })
        members["checkedAt"] = .string(UTCTimestamp.rfc3339(checkedAt))
        self.members = members
    }

    /// `service.status`'s `health`: `ok`, `problems`, `checkedAt`, `ageSeconds`, and the probe's
    /// figures (`healthy`, `eventLoopMs`, `cooperativePoolMs`, `catalogMs`, `checkedMsAgo`).
    var json: JSONValue {
        var fields = members
        let age = ContinuousClock.now - at
        fields["ageSeconds"] = .number((age.roundedMilliseconds / 1000 * 10).rounded() / 10)
        fields["checkedMsAgo"] = .number(age.roundedMilliseconds)
        return .object(fields)
    }
}
