import Foundation

/// Follows one download for a command that waits on it: the counts for the bar, their rate and
/// ETA, and why it is stuck — said once on a line of its own when the reason changes (on a
/// terminal above the bar; piped, as a plain message), and again when it moves on.
final class DownloadFollower {
    /// What a look at the downloader found.
    enum Probe { case waiting(StallReason), queued, moving }

    let bar: ProgressBar
    private let label: String
    /// Quiet seconds, with the network allowing downloads, before the origin is blamed.
    private let originAfter: Double
    private(set) var meter = RateMeter()
    private(set) var reason: StallReason?
    private var value: Double = 0
    private var lastProbe = -Double.infinity
    private var queued = false

    /// `start`: the count already reached (bytes of a resumed download, files on the device).
    init(label: String, disabled: Bool, originAfter: Double, start: Double = 0) {
        bar = ProgressBar(label: label, disabled: disabled)
        self.label = label
        self.originAfter = originAfter
        value = start
        meter.add(start, at: Self.now)
    }

    static var now: Double { ProcessInfo.processInfo.systemUptime }

    /// The count moved (bytes or files).
    func note(_ newValue: Double) {
        meter.add(newValue, at: Self.now)
        if meter.restarted {
            set(.originFailing("an attempt failed and started over"))
        } else if newValue > value, reason != nil {
            set(nil)
        }
        value = newValue
    }

    /// The downloader said why the item waits (nil: it does not any more).
    func set(_ new: StallReason?) {
        guard new?.code != reason?.code else {
            reason = new
            return
        }
        let was = reason
        reason = new
        if let new {
            bar.message("\(label): \(new.message)")
        } else if was != nil {
            bar.message("\(label): downloading again")
        }
    }

    /// A tick: lets the rate fall when nothing arrives and, once nothing moved for a few
    /// seconds, asks `probe` (at most every 5 s) why.
    func tick(probe: () async -> Probe) async {
        let now = Self.now
        meter.add(value, at: now)
        let idle = meter.idle(at: now)
        guard idle >= 5 else { return }
        if now - lastProbe >= 5 {
            lastProbe = now
            switch await probe() {
            case .waiting(let found):
                queued = false
                set(found)
                return
            case .queued:
                queued = true
                if reason?.code != "CacheLimit" { set(nil) }
            case .moving:
                queued = false
                if let reason, reason.code != "CacheLimit", reason.code != "OriginFailing" { set(nil) }
            }
        }
        if !queued, reason == nil || reason?.code == "OriginFailing", idle >= originAfter {
            set(.originFailing("nothing arrived for \(HumanTime.duration(idle))"))
        }
    }
}
