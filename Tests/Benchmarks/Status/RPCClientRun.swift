import NIOCore
import Wire

/// The same status loops through the project's own client (`Wire.RPCClient`, SwiftNIO +
/// async/await), to show what the client library adds on top of the raw socket round trip.
enum RPCClientRun {
    static func sequential(path: String, count: Int, warmup: Int, ioTimeout: Double) async throws -> LatencyStats {
        let client = try await RPCClient.connect(path: path)
        let timeout = TimeAmount.milliseconds(Int64(ioTimeout * 1000))
        do {
            for _ in 0..<warmup { _ = try await client.call("service.status", timeout: timeout) }
            var samples = [UInt64]()
            samples.reserveCapacity(count)
            let begin = monotonicNanos()
            for _ in 0..<count {
                let t0 = monotonicNanos()
                _ = try await client.call("service.status", timeout: timeout)
                samples.append(monotonicNanos() - t0)
            }
            let wall = monotonicNanos() - begin
            await client.close()
            return LatencyStats(samples: samples, wallNanos: wall)
        } catch {
            await client.close()
            throw error
        }
    }

    /// `total` requests over `connections` clients, one task each, every call awaited before
    /// the next on its connection (no pipelining).
    static func concurrent(path: String, connections: Int, total: Int, warmup: Int, ioTimeout: Double) async throws -> LatencyStats {
        var clients: [RPCClient] = []
        for _ in 0..<connections { clients.append(try await RPCClient.connect(path: path)) }
        let timeout = TimeAmount.milliseconds(Int64(ioTimeout * 1000))
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for client in clients {
                    group.addTask { for _ in 0..<warmup { _ = try await client.call("service.status", timeout: timeout) } }
                }
                try await group.waitForAll()
            }
            let begin = monotonicNanos()
            let samples = try await withThrowingTaskGroup(of: [UInt64].self) { group in
                for (index, client) in clients.enumerated() {
                    let share = total / connections + (index < total % connections ? 1 : 0)
                    group.addTask {
                        var samples = [UInt64]()
                        samples.reserveCapacity(share)
                        for _ in 0..<share {
                            let t0 = monotonicNanos()
                            _ = try await client.call("service.status", timeout: timeout)
                            samples.append(monotonicNanos() - t0)
                        }
                        return samples
                    }
                }
                var all: [UInt64] = []
                for try await s in group { all += s }
                return all
            }
            let wall = monotonicNanos() - begin
            for client in clients { await client.close() }
            return LatencyStats(samples: samples, wallNanos: wall)
        } catch {
            for client in clients { await client.close() }
            throw error
        }
    }
}
