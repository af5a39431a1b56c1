import HTTPClient
import NIOConcurrencyHelpers
import OriginClient
import Wire

/// Waiting for a catalog refresh that several callers share. The refresh is an unstructured task,
/// and awaiting a task's value stops neither when the waiter is cancelled nor at the waiter's
/// deadline: a `catalog.refresh` joining a background refresh that hangs on a silent origin would
/// wait as long as that one does. Here the waiter gets the refresh's outcome, or
/// `OriginUnreachable` once its own deadline (`RetryPolicy.endsBy`) passes, or `CancellationError`
/// once it is cancelled (a stop). The refresh itself goes on; its owner cancels it.
enum SharedRefresh {
    static func value<Value: Sendable>(of task: Task<Value, Error>, until end: ContinuousClock.Instant?) async throws -> Value {
        let waiter = Waiter<Value>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                waiter.begin(continuation)
                let watch = Task { waiter.settle(await task.result) }
                let timer = end.map { end in
                    Task {
                        try await Task.sleep(until: end, clock: .continuous)
                        waiter.settle(
                            .failure(
                                OriginError(
                                    name: RPCErrorKind.originUnreachable.name,
                                    message: "the origin did not answer within the call's deadline. Check the network and the origin URL.",
                                    transportError: HTTPClientError.Code.timeout.name)))
                    }
                }
                waiter.onSettle {
                    watch.cancel()
                    timer?.cancel()
                }
                if Task.isCancelled { waiter.settle(.failure(CancellationError())) }
            }
        } onCancel: {
            waiter.settle(.failure(CancellationError()))
        }
    }

    /// Resumes its continuation once, with whichever outcome comes first.
    private final class Waiter<Value: Sendable>: Sendable {
        private struct State {
            var continuation: CheckedContinuation<Value, Error>?
            var early: Result<Value, Error>?
            var cleanUp: (@Sendable () -> Void)?
            var settled = false
        }
        private let state = NIOLockedValueBox(State())

        func begin(_ continuation: CheckedContinuation<Value, Error>) {
            let early = state.withLockedValue { s -> Result<Value, Error>? in
                guard let early = s.early else {
                    s.continuation = continuation
                    return nil
                }
                return early
            }
            if let early { continuation.resume(with: early) }
        }

        func onSettle(_ cleanUp: @escaping @Sendable () -> Void) {
            let now = state.withLockedValue { s -> Bool in
                if s.settled { return true }
                s.cleanUp = cleanUp
                return false
            }
            if now { cleanUp() }
        }

        func settle(_ result: Result<Value, Error>) {
            let (continuation, cleanUp) = state.withLockedValue { s -> (CheckedContinuation<Value, Error>?, (@Sendable () -> Void)?) in
                guard !s.settled else { return (nil, nil) }
                s.settled = true
                defer {
                    s.continuation = nil
                    s.cleanUp = nil
                }
                if s.continuation == nil { s.early = result }
                return (s.continuation, s.cleanUp)
            }
            continuation?.resume(with: result)
            cleanUp?()
        }
    }
}
