import BlockingIO
import Foundation
import NIOConcurrencyHelpers
import TestSupport
import XCTest

/// A dedicated thread carries its name where the kernel shows it (/proc, `top -H`, `perf`).
final class NamedThreadTests: XCTestCase {
    func testTheKernelSeesTheThreadsName() throws {
        let running = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        NamedThread.start("cassette-probe") {
            running.signal()
            release.wait()
        }
        defer { release.signal() }
        XCTAssertEqual(running.wait(timeout: .now() + 10), .success)
        var names: [String] = []
        for tid in try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task") {
            names.append(try readProcFile("/proc/self/task/\(tid)/comm").trimmingCharacters(in: .whitespacesAndNewlines))
        }
        XCTAssertTrue(names.contains("cassette-probe"), "threads: \(names)")
    }

    func testAWorkersThreadIsNamedToo() throws {
        let handled = DispatchSemaphore(value: 0)
        let seen = NIOLockedValueBox("")
        let worker = OrderedWorker<Int>(name: "cassette-order") { _ in
            seen.withLockedValue { $0 = (try? readProcFile("/proc/thread-self/comm")) ?? "" }
            handled.signal()
        }
        worker.submit(1)
        XCTAssertEqual(handled.wait(timeout: .now() + 10), .success)
        worker.finish()
        XCTAssertEqual(seen.withLockedValue { $0 }.trimmingCharacters(in: .whitespacesAndNewlines), "cassette-order")
    }
}
