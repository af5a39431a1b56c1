import NIOCore

/// Runs a task's jobs on one SwiftNIO event loop.
///
/// A request's task prefers the loop of the connection it came on: the frame is read, the
/// method runs and the answer is written on one thread, instead of handing the request to
/// Swift's cooperative pool and the answer back to the loop (two thread wake-ups per request).
/// What the method awaits elsewhere (an actor bound to another executor, GRDB's queues, the
/// blocking pool) still runs there. Like the cooperative pool, the loop must never block:
/// the rule of docs/architecture.md ("Threads and blocking") covers both.
final class EventLoopTaskExecutor: TaskExecutor, @unchecked Sendable {
    private let loop: EventLoop

    init(_ loop: EventLoop) {
        self.loop = loop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }
}
