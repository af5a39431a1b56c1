/// Summary of one set of timed samples. Latencies in microseconds.
struct LatencyStats: Codable, Sendable {
    var count: Int
    var errors: Int
    var meanMicros: Double
    var p50Micros: Double
    var p99Micros: Double
    var minMicros: Double
    var maxMicros: Double
    /// Completed samples per second of wall time (nil when the samples were not back to back).
    var throughputPerSecond: Double?
    var wallSeconds: Double?

    /// - Parameters:
    ///   - samples: one duration per completed request, in nanoseconds.
    ///   - wallNanos: the wall time the whole run took, when throughput is meaningful.
    init(samples: [UInt64], errors: Int = 0, wallNanos: UInt64? = nil) {
        let sorted = samples.sorted()
        count = sorted.count
        self.errors = errors
        let micros = { (n: UInt64) in Double(n) / 1_000 }
        meanMicros = sorted.isEmpty ? 0 : micros(sorted.reduce(0, +)) / Double(sorted.count)
        p50Micros = micros(Self.percentile(50, of: sorted))
        p99Micros = micros(Self.percentile(99, of: sorted))
        minMicros = micros(sorted.first ?? 0)
        maxMicros = micros(sorted.last ?? 0)
        if let wallNanos, wallNanos > 0 {
            wallSeconds = Double(wallNanos) / 1e9
            throughputPerSecond = Double(sorted.count) / (Double(wallNanos) / 1e9)
        }
    }

    /// Nearest-rank percentile of an ascending array (0 when empty).
    static func percentile(_ p: Double, of sorted: [UInt64]) -> UInt64 {
        guard !sorted.isEmpty else { return 0 }
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up))
        return sorted[min(max(rank, 1), sorted.count) - 1]
    }

    /// Field-wise medians of several runs (nil when there are none): the figure of a benchmark
    /// that ran in alternating rounds.
    static func median(_ runs: [LatencyStats]) -> LatencyStats? {
        guard var result = runs.first else { return nil }
        func m(_ values: [Double]) -> Double { values.sorted()[(values.count - 1) / 2] }
        result.count = runs.reduce(0) { $0 + $1.count }
        result.errors = runs.reduce(0) { $0 + $1.errors }
        result.meanMicros = m(runs.map(\.meanMicros))
        result.p50Micros = m(runs.map(\.p50Micros))
        result.p99Micros = m(runs.map(\.p99Micros))
        result.minMicros = runs.map(\.minMicros).min() ?? 0
        result.maxMicros = runs.map(\.maxMicros).max() ?? 0
        let throughputs = runs.compactMap(\.throughputPerSecond)
        result.throughputPerSecond = throughputs.isEmpty ? nil : m(throughputs)
        result.wallSeconds = runs.compactMap(\.wallSeconds).reduce(0, +)
        return result
    }
}
