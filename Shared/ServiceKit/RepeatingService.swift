import ServiceLifecycle

/// A background loop as a member of the daemon's `ServiceGroup`: once `parts` are ready it
/// runs `body` again and again, each time after the pause `body` returns (nil: no more rounds),
/// until the group shuts down. SIGTERM cancels a round in progress (in-flight requests are cancelled with it;
/// what is on disk stays), so no loop can hold up the stop.
public struct RepeatingService<Parts: Sendable>: Service, CustomStringConvertible {
    public let description: String
    private let parts: @Sendable () async throws -> Parts
    private let body: @Sendable (Parts) async -> Duration?

    /// - Parameters:
    ///   - name: for the service group's log lines.
    ///   - body: one round; returns how long to wait before the next, or nil after the last.
    public init(_ name: String, parts: Task<Parts, Error>, body: @escaping @Sendable (Parts) async -> Duration?) {
        description = name
        self.parts = { try await parts.value }
        self.body = body
    }

    /// A loop over parts that are ready now.
    public init(_ name: String, parts: Parts, body: @escaping @Sendable (Parts) async -> Duration?) {
        description = name
        self.parts = { parts }
        self.body = body
    }

    public func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                let parts = try await self.parts()
                while !Task.isCancelled, let pause = await body(parts) {
                    try await Task.sleep(for: pause)
                }
            }
            // Returning early would stop the whole group: a finished loop waits for the end.
            try await gracefulShutdown()
        } catch is CancellationError {
            // The group is stopping.
        }
    }
}
