import Foundation

/// A thread of its own that handles the items given to it one at a time, in the order given:
/// for blocking work that must keep its order and never run on the cooperative pool or an event
/// loop (writing a download's chunks to the disk, hashing its bytes). At most `capacity` items
/// wait; `submit` blocks the submitting thread beyond that, so memory stays bounded whatever the
/// producer's speed.
///
/// The thread keeps the worker alive until it ends: after `close` (once what is queued is
/// handled) or `finish` (which also waits for that).
public final class OrderedWorker<Item>: @unchecked Sendable {
    private let condition = NSCondition()
    /// Guarded by `condition`.
    private var queued: [Item] = []
    private var closed = false
    private var ended = false
    private let capacity: Int
    private let handle: (Item) -> Void

    /// Starts the thread, named `name`; `handle` runs on it for each item.
    public init(name: String, capacity: Int = .max, handle: @escaping (Item) -> Void) {
        self.capacity = capacity
        self.handle = handle
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.start()
    }

    /// Queues `item`, waiting while `capacity` items wait already.
    public func submit(_ item: Item) {
        condition.lock()
        while queued.count >= capacity && !closed { condition.wait() }
        queued.append(item)
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until every item submitted is handled; the thread then ends.
    public func finish() {
        condition.lock()
        closed = true
        condition.broadcast()
        while !ended { condition.wait() }
        condition.unlock()
    }

    /// Lets the thread end once what is queued is handled, without waiting for it.
    public func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while queued.isEmpty && !closed { condition.wait() }
            if queued.isEmpty {
                ended = true
                condition.broadcast()
                condition.unlock()
                return
            }
            let next = queued.removeFirst()
            condition.broadcast()
            condition.unlock()
            handle(next)
        }
    }
}
