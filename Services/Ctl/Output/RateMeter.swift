/// How fast a count grows (bytes, files), over the last few seconds, and when it will reach a
/// total at that pace. Times are seconds on any monotonic scale. A count that goes down (an
/// attempt started over) starts the measure afresh.
struct RateMeter {
    /// Seconds of history the rate is measured over.
    var window: Double = 8
    private var samples: [(time: Double, value: Double)] = []
    /// When the count last grew.
    private(set) var lastGrowth: Double?
    /// The count went down at the last sample: an attempt started over.
    private(set) var restarted = false

    init(window: Double = 8) { self.window = window }

    /// Notes the count at `time`. Noting the same count again as time passes (a tick) lets the
    /// rate fall when nothing arrives.
    mutating func add(_ value: Double, at time: Double) {
        restarted = false
        if let last = samples.last {
            if value < last.value {
                samples.removeAll()
                restarted = true
            } else if value > last.value {
                lastGrowth = time
            }
        } else {
            lastGrowth = time
        }
        samples.append((time, value))
        // Keep one sample at or before the window's start, so the rate spans the whole window.
        while samples.count > 2, samples[1].time <= time - window { samples.removeFirst() }
    }

    /// Units per second; nil until the samples span a second.
    var rate: Double? {
        guard let first = samples.first, let last = samples.last, last.time - first.time >= 1 else { return nil }
        return max(0, (last.value - first.value) / (last.time - first.time))
    }

    /// Seconds until `remaining` more units at the current rate; nil when nothing moves.
    func eta(remaining: Double) -> Double? {
        guard let rate, rate > 0, remaining >= 0 else { return nil }
        return remaining / rate
    }

    /// Seconds since the count last grew.
    func idle(at time: Double) -> Double {
        lastGrowth.map { time - $0 } ?? 0
    }
}
