import NIOConcurrencyHelpers
import NIOCore

/// One transfer waiting for, then holding, a thread of the client's pool. Whoever comes first
/// settles it: the transfer's result, the task's cancellation, or the queue limit running out
/// while it still waits. Cancelled or out of time while queued, the caller gets its answer at
/// once; the pool thread that picks the work up later finds it abandoned and returns.
final class TransferSlot<Value: Sendable>: Sendable {
    private enum State {
        case queued(CheckedContinuation<Value, Error>)
        case running(CheckedContinuation<Value, Error>)
        case settled
    }
    private let state: NIOLockedValueBox<State>

    init(_ continuation: CheckedContinuation<Value, Error>) {
        state = NIOLockedValueBox(.queued(continuation))
    }

    /// Called on the pool thread before the transfer: false when the caller already has its answer.
    func start() -> Bool {
        state.withLockedValue { state in
            guard case .queued(let continuation) = state else { return false }
            state = .running(continuation)
            return true
        }
    }

    /// The transfer ended.
    func finish(_ result: Result<Value, Error>) {
        let continuation = state.withLockedValue { state -> CheckedContinuation<Value, Error>? in
            switch state {
            case .queued(let c), .running(let c):
                state = .settled
                return c
            case .settled:
                return nil
            }
        }
        continuation?.resume(with: result)
    }

    /// Answers with `error` unless the transfer already started (it then ends by itself, through
    /// its own timeout or the cancellation flag).
    func abandonIfQueued(_ error: HTTPClientError) {
        let continuation = state.withLockedValue { state -> CheckedContinuation<Value, Error>? in
            guard case .queued(let c) = state else { return nil }
            state = .settled
            return c
        }
        continuation?.resume(throwing: error)
    }
}
