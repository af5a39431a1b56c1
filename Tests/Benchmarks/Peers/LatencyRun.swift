import Foundation

/// One client connection that can ask its server for status and wait for the full answer.
protocol StatusConnection: AnyObject {
    func status() throws
}

/// The timed loops, shared by both peers so that they are measured the same way.
enum LatencyRun {
    /// `count` back-to-back requests on one connection, after `warmup` untimed ones.
    static func sequential(_ connection: StatusConnection, count: Int, warmup: Int) throws -> LatencyStats {
        for _ in 0..<warmup { try connection.status() }
        var samples = [UInt64]()
        samples.reserveCapacity(count)
        let begin = monotonicNanos()
        for _ in 0..<count {
            let t0 = monotonicNanos()
            try connection.status()
            samples.append(monotonicNanos() - t0)
        }
        return LatencyStats(samples: samples, wallNanos: monotonicNanos() - begin)
    }

    /// `total` requests spread over `connections.count` connections, one thread each, all
    /// released together; each connection first does `warmup` untimed requests.
    static func concurrent(
        _ connections: [StatusConnection], total: Int, warmup: Int,
        timeoutSeconds: Double
    ) throws -> LatencyStats {
        let n = connections.count
        let results = Results(threads: n)
        let ready = DispatchGroup()
        let done = DispatchGroup()
        let go = DispatchSemaphore(value: 0)
        for (index, connection) in connections.enumerated() {
            let share = total / n + (index < total % n ? 1 : 0)
            let box = UncheckedBox(connection)
            ready.enter()
            done.enter()
            let thread = Thread {
                defer { done.leave() }
                var samples = [UInt64]()
                samples.reserveCapacity(share)
                var warmedUp = false
                // Leaves `ready` exactly once, also when the warm-up fails.
                defer { if !warmedUp { ready.leave() } }
                do {
                    for _ in 0..<warmup { try box.value.status() }
                    warmedUp = true
                    ready.leave()
                    guard go.wait(timeout: .now() + timeoutSeconds) == .success else { throw BenchError("start signal never came") }
                    for _ in 0..<share {
                        let t0 = monotonicNanos()
                        try box.value.status()
                        samples.append(monotonicNanos() - t0)
                    }
                    results.finish(index, samples, error: nil)
                } catch {
                    results.finish(index, samples, error: error)
                }
            }
            thread.name = "bench-conn-\(index)"
            thread.start()
        }
        guard ready.wait(timeout: .now() + timeoutSeconds) == .success else {
            throw BenchError("the \(n) connections did not finish warming up within \(timeoutSeconds) s")
        }
        let begin = monotonicNanos()
        for _ in 0..<n { go.signal() }
        guard done.wait(timeout: .now() + timeoutSeconds) == .success else {
            throw BenchError("the concurrent run did not finish within \(timeoutSeconds) s")
        }
        let wall = monotonicNanos() - begin
        if let error = results.firstError { throw BenchError("a connection failed: \(error)") }
        return LatencyStats(samples: results.allSamples, wallNanos: wall)
    }
}

/// Per-thread results, written once by each thread.
private final class Results: @unchecked Sendable {
    private let lock = NSLock()
    private var samples: [[UInt64]]
    private var errors: [Error] = []

    init(threads: Int) { samples = Array(repeating: [], count: threads) }

    func finish(_ index: Int, _ s: [UInt64], error: Error?) {
        lock.withLock {
            samples[index] = s
            if let error { errors.append(error) }
        }
    }

    var firstError: Error? { lock.withLock { errors.first } }
    var allSamples: [UInt64] { lock.withLock { samples.flatMap { $0 } } }
}

/// Hands a connection to the one thread that uses it.
private struct UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
