import NIOConcurrencyHelpers
import ServiceLifecycle

/// How long a stop (SIGTERM, SIGINT) may take, counted from the signal: every service ends
/// within 10 s whatever it is doing (docs/protocol.md, "While the service stops").
public enum StopBudget {
    /// Requests in flight may finish until then; after it they are cancelled.
    public static let drain: Duration = .seconds(5)
    /// Cancelled requests get this long to answer before their connections close.
    public static let cancelGrace: Duration = .seconds(1)
    /// Past this, whatever still runs is cancelled (the service group with it).
    public static let cancelAfter: Duration = .seconds(8)
    /// Past this, the process exits even if something ignored its cancellation.
    public static let exitAfter: Duration = .milliseconds(9_500)
}

/// When the service was asked to stop, once it was: the moment every stop deadline counts from.
public final class StopRequest: Sendable {
    private let moment = NIOLockedValueBox<ContinuousClock.Instant?>(nil)
    private let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    public init() {
        (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    public var requestedAt: ContinuousClock.Instant? { moment.withLockedValue { $0 } }

    func markRequested() {
        let first = moment.withLockedValue { at -> Bool in
            guard at == nil else { return false }
            at = .now
            return true
        }
        if first {
            continuation.yield()
            continuation.finish()
        }
    }

    /// Waits for the stop request; false when the waiting task was cancelled first. One waiter.
    func requested() async -> Bool {
        for await _ in stream { return true }
        return requestedAt != nil
    }

    /// The time left until `budget` after the stop request (the whole budget before it).
    func remaining(of budget: Duration) -> Duration {
        guard let at = requestedAt else { return budget }
        return max(.zero, at + budget - .now)
    }
}

/// The last member of the service group, so the first to hear of a graceful shutdown: it notes
/// the moment, from which the stop deadlines count, and ends.
struct StopRequestService: Service {
    let stop: StopRequest

    func run() async throws {
        try? await gracefulShutdown()
        stop.markRequested()
    }
}
