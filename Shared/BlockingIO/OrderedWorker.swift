import Foundation

/// A thread of its own that handles the items given to it in the order given: for blocking work
/// that must keep its order and never run on the cooperative pool or an event loop (writing a
/// download's chunks to the disk, hashing its bytes, committing records with an fsync). At most
/// `capacity` items wait; `submit` blocks the submitting thread beyond that, so memory stays
/// bounded whatever the producer's speed.
///
/// Items are handled one at a time, or in batches of everything waiting when the thread comes
/// back for more (`maxBatch`): a committer then shares one fsync among the callers that arrived
/// while the previous one ran. The thread is woken only when it sleeps, and a producer only when
/// one waits for room: an item given while the thread works costs no wake-up.
///
/// The thread keeps the worker alive until it ends: after `close` (once what is queued is
/// handled) or `finish` (which also waits for that).
public final class OrderedWorker<Item>: @unchecked Sendable {
    private let condition = NSCondition()
    /// Guarded by `condition`.
    private var queued: [Item] = []
    private var closed = false
    private var started = false
    private var ended = false
    private var sleeping = false
    private var producersWaiting = 0
    private let name: String
    private let capacity: Int
    private let maxBatch: Int
    private let handle: ([Item]) -> Void

    /// Starts the thread, named `name`; `handle` runs on it for each item.
    public convenience init(name: String, capacity: Int = .max, handle: @escaping (Item) -> Void) {
        self.init(name: name, capacity: capacity, maxBatch: 1, startsLazily: false) { items in items.forEach(handle) }
    }

    /// `handleBatch` runs on the thread, named `name`, with up to `maxBatch` items at a time:
    /// all those waiting when it starts. With `startsLazily` the thread starts with the first
    /// item, so a worker never given one holds no thread.
    public init(
        name: String, capacity: Int = .max, maxBatch: Int, startsLazily: Bool,
        handleBatch: @escaping ([Item]) -> Void
    ) {
        precondition(maxBatch >= 1 && capacity >= 1, "an empty batch or queue")
        self.name = name
        self.capacity = capacity
        self.maxBatch = maxBatch
        self.handle = handleBatch
        if !startsLazily {
            started = true
            startThread()
        }
    }

    /// Queues `item`, waiting while `capacity` items wait already.
    public func submit(_ item: Item) {
        condition.lock()
        while queued.count >= capacity && !closed {
            producersWaiting += 1
            condition.wait()
            producersWaiting -= 1
        }
        queued.append(item)
        let start = !started
        started = true
        let wake = sleeping
        sleeping = false
        // Signalled after unlocking, so the thread does not wake only to wait for the lock.
        condition.unlock()
        if start {
            startThread()
        } else if wake {
            condition.broadcast()
        }
    }

    /// Waits until every item submitted is handled; the thread then ends.
    public func finish() {
        condition.lock()
        closed = true
        if !started { ended = true }
        condition.broadcast()
        while !ended { condition.wait() }
        condition.unlock()
    }

    /// Lets the thread end once what is queued is handled, without waiting for it.
    public func close() {
        condition.lock()
        closed = true
        if !started { ended = true }
        condition.broadcast()
        condition.unlock()
    }

    private func startThread() {
        NamedThread.start(name) { [self] in run() }
    }

    private func run() {
        while true {
            condition.lock()
            while queued.isEmpty && !closed {
                sleeping = true
                condition.wait()
            }
            sleeping = false
            if queued.isEmpty {
                ended = true
                condition.broadcast()
                condition.unlock()
                return
            }
            let batch = Array(queued.prefix(maxBatch))
            queued.removeFirst(batch.count)
            let wakeProducers = producersWaiting > 0
            condition.unlock()
            if wakeProducers { condition.broadcast() }
            handle(batch)
        }
    }
}
