import Synchronization

/// Counts of this process's transfers, for its metrics: read at any time, without a lock.
public enum TransferTotals {
    private static let received = Atomic<Int>(0)

    /// Body bytes received by every transfer since the process started (what curl handed over,
    /// whether it went to a file or to memory).
    public static var bodyBytesReceived: Int { received.load(ordering: .relaxed) }

    static func add(received count: Int) {
        received.add(count, ordering: .relaxed)
    }
}
