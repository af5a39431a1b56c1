import ServiceKit
import Wire

/// The `reporter` section of the config file (docs/configuration.md). Every key is optional.
struct ReporterSettings: Sendable, Equatable {
    /// Bytes of pending records the outbox may hold before new ones are refused with `QueueFull`.
    var maxQueueBytes = 256 << 20
    /// Records per delivery request; the origin takes at most 500.
    var batchSize = 500
    /// The delivery backoff after a failed attempt grows from here…
    var retryInitialSeconds = 1.0
    /// …up to here.
    var retryMaxSeconds = 300.0
    /// While the origin is unreachable, how often a TCP connect checks whether it is back.
    var probeIntervalSeconds = 1.0

    static let maxRecordBytes = 20 * 1024
    static let maxBatchSize = 500
    static let knownKeys: Set<String> =
        ([
            "maxQueueBytes", "batchSize", "retryInitialSeconds", "retryMaxSeconds",
            "probeIntervalSeconds",
        ] as Set<String>).union(MetricsSettings.keys)

    init() {}

    /// Reads the section; a wrong type or a value out of range stops the service at start with
    /// `ConfigInvalid` naming the key, rather than running with a setting nobody asked for.
    init(section: [String: JSONValue]?) throws(DaemonError) {
        guard let section else { return }
        var problems: [String] = []
        func number(_ key: String) -> Double? {
            guard let value = section[key], value != .null else { return nil }
            guard let n = value.doubleValue else {
                problems.append("reporter.\(key) must be a number")
                return nil
            }
            return n
        }
        func integer(_ key: String, _ range: ClosedRange<Int>) -> Int? {
            guard let n = number(key) else { return nil }
            guard let i = JSONValue.number(n).intValue, range.contains(i) else {
                problems.append("reporter.\(key) must be a whole number in \(range.lowerBound)…\(range.upperBound)")
                return nil
            }
            return i
        }
        func seconds(_ key: String, _ range: ClosedRange<Double>) -> Double? {
            guard let n = number(key) else { return nil }
            guard range.contains(n) else {
                problems.append("reporter.\(key) must be between \(range.lowerBound) and \(range.upperBound) seconds")
                return nil
            }
            return n
        }
        if let v = integer("maxQueueBytes", 1...(1 << 50)) { maxQueueBytes = v }
        if let v = integer("batchSize", 1...Self.maxBatchSize) { batchSize = v }
        if let v = seconds("retryInitialSeconds", 0.01...3600) { retryInitialSeconds = v }
        if let v = seconds("retryMaxSeconds", 0.01...86400) { retryMaxSeconds = v }
        if let v = seconds("probeIntervalSeconds", 0.05...3600) { probeIntervalSeconds = v }
        if retryMaxSeconds < retryInitialSeconds {
            problems.append("reporter.retryMaxSeconds must not be below reporter.retryInitialSeconds")
        }
        let unknown = section.keys.filter { !Self.knownKeys.contains($0) }.sorted()
        if !unknown.isEmpty {
            problems.append("unknown key(s) in reporter: \(unknown.joined(separator: ", ")) (known: \(Self.knownKeys.sorted().joined(separator: ", ")))")
        }
        guard problems.isEmpty else { throw DaemonError(.configInvalid, problems.joined(separator: "; ") + ".") }
    }
}
