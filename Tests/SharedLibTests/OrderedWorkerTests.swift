import BlockingIO
import Foundation
import XCTest

final class OrderedWorkerTests: XCTestCase {
    /// Items come out in the order given, each once, and `finish` returns after the last.
    func testItemsAreHandledInOrderAndFinishWaitsForTheLast() {
        let seen = Seen()
        let worker = OrderedWorker<Int>(name: "test-ordered") { item in
            usleep(50)
            seen.append([item])
        }
        for i in 0..<500 { worker.submit(i) }
        worker.finish()
        XCTAssertEqual(seen.items, Array(0..<500))
    }

    /// A batch holds what waited when the thread came back for more, never more than `maxBatch`.
    func testBatchesTakeWhatWaitedUpToTheLimit() {
        let seen = Seen()
        let gate = DispatchSemaphore(value: 0)
        let worker = OrderedWorker<Int>(name: "test-batches", maxBatch: 4, startsLazily: true) { batch in
            if batch.first == 0 { gate.wait() }
            seen.append(batch)
        }
        worker.submit(0)
        for i in 1...10 { worker.submit(i) }
        gate.signal()
        worker.finish()
        XCTAssertEqual(seen.items, Array(0...10))
        XCTAssertTrue(seen.batches.allSatisfy { $0.count <= 4 }, "\(seen.batches)")
        XCTAssertTrue(seen.batches.dropFirst().contains { $0.count > 1 }, "items that waited together were handled one by one: \(seen.batches)")
    }

    /// A lazy worker never given an item finishes at once (it has no thread to wait for).
    func testALazyWorkerNeverGivenAnItemFinishesAtOnce() {
        let worker = OrderedWorker<Int>(name: "test-lazy", maxBatch: 8, startsLazily: true) { _ in XCTFail("no item was given") }
        worker.finish()
    }

    /// Past `capacity` waiting items a producer waits for room instead of growing the queue.
    func testAProducerWaitsForRoomBeyondTheCapacity() {
        let gate = DispatchSemaphore(value: 0)
        let seen = Seen()
        let worker = OrderedWorker<Int>(name: "test-capacity", capacity: 2) { item in
            if item == 0 { gate.wait() }
            seen.append([item])
        }
        worker.submit(0)
        let submitted = Seen()
        let producer = Thread {
            for i in 1...5 {
                worker.submit(i)
                submitted.append([i])
            }
        }
        producer.start()
        XCTAssertTrue(waitUntil { submitted.items.count >= 2 })
        usleep(100_000)
        // Item 0 is being handled; items 1 and 2 fill the queue, so the producer waits at 3.
        XCTAssertEqual(submitted.items, [1, 2])
        gate.signal()
        // `finish` ends the worker: items given after it are not taken, so let the producer end first.
        XCTAssertTrue(waitUntil { submitted.items.count == 5 })
        worker.finish()
        XCTAssertEqual(seen.items, Array(0...5))
    }
}

/// Polls `condition` every millisecond for up to ten seconds.
private func waitUntil(_ condition: () -> Bool) -> Bool {
    for _ in 0..<10_000 {
        if condition() { return true }
        usleep(1_000)
    }
    return condition()
}

private final class Seen: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [[Int]] = []
    func append(_ batch: [Int]) { lock.withLock { storage.append(batch) } }
    var batches: [[Int]] { lock.withLock { storage } }
    var items: [Int] { batches.flatMap { $0 } }
}
