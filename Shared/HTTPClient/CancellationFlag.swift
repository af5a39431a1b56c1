import Synchronization

/// Set by Swift task cancellation on any thread; read by curl's progress callback on the pool
/// thread, which then aborts the transfer.
final class CancellationFlag: Sendable {
    private let flag = Atomic<Bool>(false)

    func cancel() { flag.store(true, ordering: .relaxed) }
    var isCancelled: Bool { flag.load(ordering: .relaxed) }
}
