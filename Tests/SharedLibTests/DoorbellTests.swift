import Pacing
import XCTest

/// The one wake-up primitive: kept rings, reasons, time limits, close and cancellation.
final class DoorbellTests: XCTestCase {
    private enum Reason: Hashable, Sendable { case work, flush }

    func testARingWhileNobodyWaitsIsKeptForTheNextWait() async {
        let bell = Doorbell<Reason>()
        bell.ring(.work)
        let woken = await bell.wait(upTo: .seconds(10))
        XCTAssertEqual(woken, [.work])
    }

    func testAWaitForSomeReasonsLeavesTheOthersKept() async {
        let bell = Doorbell<Reason>()
        bell.ring(.work)
        let early = await bell.wait(upTo: .milliseconds(50), wakingFor: [.flush])
        XCTAssertEqual(early, [], "the time ran out: work does not wake a wait for flush")
        let later = await bell.wait(upTo: .seconds(10))
        XCTAssertEqual(later, [.work], "work was kept")
    }

    func testARingWakesAWaitUnderWay() async {
        let bell = Doorbell<Reason>()
        let waiting = Task { await bell.wait() }
        try? await Task.sleep(for: .milliseconds(50))
        bell.ring(.flush)
        let woken = await waiting.value
        XCTAssertEqual(woken, [.flush])
    }

    func testCloseEndsTheWaitUnderWayAndEveryLaterOne() async {
        let bell = Doorbell<Ring>()
        let waiting = Task { await bell.wait() }
        try? await Task.sleep(for: .milliseconds(50))
        bell.close()
        let woken = await waiting.value
        XCTAssertNil(woken)
        let later = await bell.wait(upTo: .seconds(10))
        XCTAssertNil(later)
        XCTAssertTrue(bell.isClosed)
    }

    func testCancellationEndsTheWaitWithoutClosingTheBell() async {
        let bell = Doorbell<Ring>()
        let waiting = Task { await bell.wait() }
        try? await Task.sleep(for: .milliseconds(50))
        waiting.cancel()
        let woken = await waiting.value
        XCTAssertNil(woken)
        XCTAssertFalse(bell.isClosed)
        bell.ring()
        let next = await bell.wait(upTo: .seconds(10))
        XCTAssertEqual(next, [.ring])
    }
}
