import Foundation
import Wire

/// Polls `service.status` on a connection of its own for as long as a stress test runs and
/// records how long every answer took, so a test can assert the service stayed responsive.
public final class StatusProbe: @unchecked Sendable {
    public struct Figures: Sendable, CustomStringConvertible {
        public var calls = 0
        public var maxSeconds = 0.0
        public var totalSeconds = 0.0
        /// Answers slower than the limit, and calls that failed or got no answer at all.
        public var late: [Double] = []
        public var failures: [String] = []

        public var meanSeconds: Double { calls == 0 ? 0 : totalSeconds / Double(calls) }
        public var description: String {
            String(format: "status max %.3f s, mean %.4f s over %d calls", maxSeconds, meanSeconds, calls)
                + (late.isEmpty ? "" : ", \(late.count) over the limit") + (failures.isEmpty ? "" : ", failures: \(failures.prefix(3))")
        }
    }

    public let limitSeconds: Double
    private let lock = NSLock()
    private var figures = Figures()
    private var stopped = false
    private var task: Task<Void, Never>?
    private let client: RPCClient

    private init(client: RPCClient, limitSeconds: Double) {
        self.client = client
        self.limitSeconds = limitSeconds
    }

    /// Connects to `socketPath` and starts polling every `interval` seconds. A call that gets
    /// no answer within `giveUpSeconds` counts as a failure (the service is stuck).
    public static func start(
        socketPath: String, interval: Double = 0.05, limitSeconds: Double = 1.0,
        giveUpSeconds: Int64 = 10
    ) async throws -> StatusProbe {
        let probe = StatusProbe(client: try await RPCClient.connect(path: socketPath), limitSeconds: limitSeconds)
        probe.task = Task { [probe] in
            let clock = ContinuousClock()
            while !probe.isStopped {
                let began = clock.now
                var failure: String?
                do {
                    let status = try await probe.client.call("service.status", timeout: .seconds(giveUpSeconds))
                    if status["pid"]?.intValue == nil { failure = "no pid in \(status)" }
                } catch {
                    failure = "\(error)"
                }
                let elapsed = began.duration(to: clock.now)
                probe.record(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18, failure: failure)
                try? await Task.sleep(for: .milliseconds(Int64(interval * 1000)))
            }
        }
        return probe
    }

    private var isStopped: Bool { lock.withLock { stopped } }

    private func record(_ seconds: Double, failure: String?) {
        lock.withLock {
            if let failure {
                if !stopped { figures.failures.append(failure) }
                return
            }
            figures.calls += 1
            figures.totalSeconds += seconds
            figures.maxSeconds = max(figures.maxSeconds, seconds)
            if seconds > limitSeconds { figures.late.append(seconds) }
        }
    }

    /// What was measured so far, while the probe keeps running.
    public var current: Figures { lock.withLock { figures } }

    /// Stops polling, closes the connection and returns the figures.
    public func stop() async -> Figures {
        lock.withLock { stopped = true }
        await task?.value
        await client.close()
        return current
    }
}
