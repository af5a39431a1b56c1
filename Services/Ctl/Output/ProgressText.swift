import Foundation

/// The words after a progress bar: how much, how fast, how long still — or why it waits.
enum ProgressText {
    /// `1.2 MB of 3.0 MB, 250 kB/s, ETA 7 s`.
    static func bytes(done: Double, total: Double?, rate: Double?, waiting: StallReason?) -> String {
        var parts = [total.map { "\(ByteSize.format(done)) of \(ByteSize.format($0))" } ?? ByteSize.format(done)]
        if let waiting {
            parts.append("waiting: \(waiting.short)")
        } else if let rate {
            parts.append(ByteSize.rate(rate))
            if let total, rate > 0 { parts.append("ETA \(HumanTime.duration(max(0, total - done) / rate))") }
        }
        return parts.joined(separator: ", ")
    }

    /// `3/12 files, 1 failed, 24 files/min, ETA 22 s`.
    static func files(done: Int, total: Int, failed: Int, rate: Double?, waiting: StallReason?) -> String {
        var parts = ["\(done)/\(total) files"]
        if failed > 0 { parts.append("\(failed) failed") }
        if let waiting {
            parts.append("waiting: \(waiting.short)")
        } else if let rate, rate > 0 {
            parts.append(rate >= 1 ? String(format: "%.1f files/s", rate) : String(format: "%.1f files/min", rate * 60))
            let pending = total - done - failed
            if pending > 0 { parts.append("ETA \(HumanTime.duration(Double(pending) / rate))") }
        }
        return parts.joined(separator: ", ")
    }
}
