/// A doorbell for one waiting loop: a ring is kept (at most one) until the loop next waits, so
/// a ring that comes while the loop is busy is not lost.
final class Wakeup: Sendable {
    private let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    func ring() { continuation.yield() }

    /// The loop's side; one waiter per doorbell.
    func waiter() -> Waiter { Waiter(iterator: stream.makeAsyncIterator(), continuation: continuation) }

    struct Waiter {
        fileprivate var iterator: AsyncStream<Void>.Iterator
        fileprivate let continuation: AsyncStream<Void>.Continuation

        /// Returns on a ring, or once `limit` has passed when one is given. (A waiting `next()` is
        /// never cancelled: that would end the stream for good.)
        mutating func wait(upTo limit: Duration? = nil) async {
            let timer = limit.map { limit in
                Task { [continuation] in
                    try await Task.sleep(for: limit)
                    continuation.yield()
                }
            }
            _ = await iterator.next()
            timer?.cancel()
        }
    }
}
