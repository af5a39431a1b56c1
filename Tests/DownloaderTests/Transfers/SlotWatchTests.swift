import XCTest

@testable import downloader

/// The slot watch's rules, fed second by second without a clock: a silent transfer is given up
/// on whether or not files wait, a trickle below the floor too, a transfer far slower than the
/// others only while files wait, and a slow link (every transfer slow alike) never.
final class SlotWatchTests: XCTestCase {
    private let limits = SlotWatch.Limits(stallSeconds: 10, windowSeconds: 15, ratio: 20, floorBytesPerSecond: 512)

    /// Runs `seconds` ticks; `rates[fileId]` bytes a second each; returns each verdict with its second.
    private func run(
        _ watch: inout SlotWatch, seconds: Int, rates: [Int64: Int64], waiting: Int,
        from start: Int = 0
    ) -> [(second: Int, fileId: Int64, verdict: SlotWatch.Verdict)] {
        var found: [(Int, Int64, SlotWatch.Verdict)] = []
        for second in start..<(start + seconds) {
            let samples = rates.keys.sorted().map { SlotWatch.Sample(fileId: $0, attempt: 1, bytes: rates[$0]! * Int64(second - start)) }
            for (fileId, verdict) in watch.tick(now: Double(second), running: samples, waiting: waiting) {
                found.append((second, fileId, verdict))
            }
        }
        return found
    }

    func testASilentTransferIsGivenUpOnAfterTheStallTimeEvenWithNothingWaiting() {
        var watch = SlotWatch(limits: limits)
        let verdicts = run(&watch, seconds: 12, rates: [1: 0, 2: 1_000_000], waiting: 0)
        XCTAssertEqual(verdicts.first?.fileId, 1)
        XCTAssertEqual(verdicts.first?.second, 10)
        XCTAssertEqual(verdicts.first?.verdict, .stalled(seconds: 10))
        XCTAssertTrue(verdicts.allSatisfy { $0.fileId == 1 }, "\(verdicts)")
        XCTAssertEqual(verdicts.first?.verdict.reason, "Stalled: no data from the origin for 10 s")
    }

    func testATrickleBelowTheFloorIsGivenUpOnEvenAlone() {
        var watch = SlotWatch(limits: limits)
        let verdicts = run(&watch, seconds: 20, rates: [7: 1], waiting: 0)
        XCTAssertEqual(verdicts.first?.fileId, 7)
        XCTAssertEqual(verdicts.first?.second, 15, "judged once a whole window was seen")
        XCTAssertEqual(verdicts.first?.verdict.reason, "Stalled: 1 B/s over 15 s, below 512 B/s")
    }

    func testTheOnlyTransferOnASlowLinkKeepsItsSlot() {
        var watch = SlotWatch(limits: limits)
        XCTAssertTrue(run(&watch, seconds: 60, rates: [1: 2_000], waiting: 0).isEmpty)
        var shared = SlotWatch(limits: limits)
        // Three files sharing a slow link alike, many more waiting: none gives way.
        XCTAssertTrue(run(&shared, seconds: 60, rates: [1: 1_500, 2: 1_400, 3: 1_600], waiting: 20).isEmpty)
    }

    func testATransferFarSlowerThanTheOthersGivesWayOnlyWhileFilesWait() {
        var idle = SlotWatch(limits: limits)
        XCTAssertTrue(run(&idle, seconds: 40, rates: [1: 1_000_000, 2: 800_000, 3: 2_000], waiting: 0).isEmpty)

        var busy = SlotWatch(limits: limits)
        let verdicts = run(&busy, seconds: 16, rates: [1: 1_000_000, 2: 800_000, 3: 2_000], waiting: 2)
        XCTAssertEqual(verdicts.map(\.fileId), [3])
        XCTAssertEqual(verdicts.first?.second, 15)
        XCTAssertEqual(verdicts.first?.verdict.reason, "Stalled: 2.0 kB/s over 15 s, far below the other downloads' 900.0 kB/s")
    }

    /// The others are small files that start and end between two looks: their bytes and time still count.
    func testFilesThatEndBetweenLooksCountForTheOthersRate() {
        var watch = SlotWatch(limits: limits)
        var verdicts: [(Int, Int64, SlotWatch.Verdict)] = []
        for second in 0..<20 {
            // File 100+second came and went since the last look: 500 kB in half a second.
            if second > 0 {
                watch.ended(
                    fileId: Int64(100 + second), attempt: 1, bytes: 500_000, now: Double(second) - 0.1,
                    startedAt: Double(second) - 0.6, startBytes: 0)
            }
            for (fileId, verdict) in watch.tick(
                now: Double(second), running: [SlotWatch.Sample(fileId: 1, attempt: 1, bytes: Int64(second) * 2_000)],
                waiting: 3)
            {
                verdicts.append((second, fileId, verdict))
            }
        }
        XCTAssertEqual(verdicts.first?.0, 15, "\(verdicts)")
        XCTAssertEqual(Set(verdicts.map(\.1)), [1], "\(verdicts)")
        XCTAssertEqual(verdicts.first?.2.reason, "Stalled: 2.0 kB/s over 15 s, far below the other downloads' 1.0 MB/s")
    }

    /// A slot held by a trickle does not make the link look slow: the others' rate is that of
    /// the transfers whose data moves.
    func testATrickleDoesNotLowerTheOthersRate() {
        var watch = SlotWatch(limits: limits)
        let verdicts = run(&watch, seconds: 16, rates: [1: 100, 2: 100_000, 3: 3_000], waiting: 2)
        XCTAssertEqual(verdicts.map(\.fileId), [1, 3], "\(verdicts)")
        XCTAssertEqual(verdicts.last?.verdict.reason, "Stalled: 3.0 kB/s over 15 s, far below the other downloads' 100.1 kB/s")
    }

    func testNoMoreGiveWayThanFilesWaitTheSlowestFirst() {
        var watch = SlotWatch(limits: limits)
        let verdicts = run(&watch, seconds: 16, rates: [1: 5_000_000, 2: 3_000, 3: 1_000, 4: 2_000], waiting: 1)
        XCTAssertEqual(verdicts.map(\.fileId), [3])
    }

    func testANewAttemptIsWatchedAfresh() {
        var watch = SlotWatch(limits: limits)
        for second in 0..<9 {
            XCTAssertTrue(watch.tick(now: Double(second), running: [SlotWatch.Sample(fileId: 1, attempt: 1, bytes: 0)], waiting: 0).isEmpty)
        }
        // The file's next attempt: its silence counts from now.
        for second in 9..<18 {
            XCTAssertTrue(watch.tick(now: Double(second), running: [SlotWatch.Sample(fileId: 1, attempt: 2, bytes: 0)], waiting: 0).isEmpty)
        }
        XCTAssertEqual(watch.tick(now: 19, running: [SlotWatch.Sample(fileId: 1, attempt: 2, bytes: 0)], waiting: 0).map(\.fileId), [1])
    }

    func testATransferWhoseBodyArrivedIsNotJudged() {
        var watch = SlotWatch(limits: limits)
        for second in 0..<30 {
            XCTAssertTrue(
                watch.tick(
                    now: Double(second), running: [SlotWatch.Sample(fileId: 1, attempt: 1, bytes: 10, holdsSlot: false)],
                    waiting: 5
                ).isEmpty)
        }
    }
}
