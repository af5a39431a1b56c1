import Foundation
import GRDB
import StateDB
import TestSupport
import Wire
import XCTest

@testable import reporter

/// The reporter's rules in memory: batching, reading the origin's answer, the outbox.
final class DeliveryBatchTests: XCTestCase {
    private func record(_ n: Int, _ kind: RecordKind = .play) -> PendingRecord {
        PendingRecord(id: "id-\(n)", kind: kind, body: #"{"\#(kind.idKey)":"id-\#(n)","productId":"tr-1"}"#)
    }

    func testOneRequestPerKindOldestKindFirstOrderKept() {
        let batch = [record(1, .consumption), record(2), record(3, .consumption), record(4)]
        let requests = DeliveryBatch.requests(batch)
        XCTAssertEqual(requests.map(\.kind), [.consumption, .play])
        XCTAssertEqual(requests[0].records.map(\.id), ["id-1", "id-3"])
        XCTAssertEqual(requests[1].records.map(\.id), ["id-2", "id-4"])
    }

    func testBodyCarriesTheStoredRecords() throws {
        let body = try JSONValue.parse(DeliveryBatch.body(kind: .play, records: [record(1), record(2)]))
        XCTAssertEqual(body["events"]?.arrayValue?.compactMap { $0["eventId"]?.stringValue }, ["id-1", "id-2"])
        let consumption = try JSONValue.parse(DeliveryBatch.body(kind: .consumption, records: [record(3, .consumption)]))
        XCTAssertEqual(consumption["records"]?.arrayValue?.count, 1)
        XCTAssertEqual(try JSONValue.parse(DeliveryBatch.body(kind: .play, records: [])), ["events": []])
    }

    func testOnlyRecordsNamedAcceptedLeavePending() throws {
        let sent = (1...4).map { record($0) }
        let answer = try JSONValue.parse(
            Array(
                """
                {"serverTime":"2026-11-21T10:00:00Z","accepted":["id-1","id-9","id-1"],
                 "rejected":[{"eventId":"id-2","index":1,"reason":"unknown product"},{"eventId":null,"index":2,"reason":"not an object"}]}
                """.utf8))
        let verdict = DeliveryBatch.verdict(answer: answer, kind: .play, sent: sent)
        XCTAssertEqual(verdict.accepted, ["id-1"], "an id not sent is ignored; a repeated one counted once")
        XCTAssertEqual(verdict.rejected, [.init(id: "id-2", reason: "unknown product"), .init(id: "id-3", reason: "not an object")])
        XCTAssertEqual(verdict.unanswered, ["id-4"])
    }

    func testAnAnswerWithoutListsDecidesNothing() throws {
        let verdict = DeliveryBatch.verdict(answer: ["serverTime": "x"], kind: .play, sent: [record(1)])
        XCTAssertTrue(verdict.accepted.isEmpty)
        XCTAssertTrue(verdict.rejected.isEmpty)
        XCTAssertEqual(verdict.unanswered, ["id-1"])
    }
}

final class GroupCommitterTests: XCTestCase {
    /// While one transaction is on disk, everyone who arrives waits for the next one, which
    /// takes them all at once: 200 concurrent writers need far fewer than 200 commits.
    func testWaitingRecordsShareOneCommit() async throws {
        let groups = Recorder()
        let committer = GroupCommitter(commit: { records in
            groups.add(records.count)
            usleep(5_000) // a slow fsync, on the committer's own thread
            return records.map { $0.id.hasSuffix("dup") ? .duplicate : .stored }
        })
        let outcomes = try await withThrowingTaskGroup(of: StoreOutcome.self) { group in
            for i in 0..<200 {
                group.addTask {
                    try await committer.store(OutboxRecord(id: i % 10 == 0 ? "\(i)-dup" : "\(i)", kind: .play, body: "{}"))
                }
            }
            return try await group.reduce(into: [StoreOutcome]()) { $0.append($1) }
        }
        XCTAssertEqual(outcomes.filter { $0 == .stored }.count, 180)
        XCTAssertEqual(outcomes.filter { $0 == .duplicate }.count, 20)
        let sizes = groups.sizes
        XCTAssertEqual(sizes.reduce(0, +), 200)
        XCTAssertLessThan(sizes.count, 50, "records were grouped: \(sizes)")
    }

    func testAFailedCommitFailsEveryoneInIt() async {
        let committer = GroupCommitter(commit: { _ in throw ReporterError(kind: .notStored, message: "disk full") })
        do {
            _ = try await committer.store(OutboxRecord(id: "a", kind: .play, body: "{}"))
            XCTFail("expected the commit's error")
        } catch {
            XCTAssertEqual((error as? ReporterError)?.kind, .notStored)
        }
    }

    final class Recorder: @unchecked Sendable {
        private let lock = NSLock()
        private var recorded: [Int] = []
        var sizes: [Int] { lock.withLock { recorded } }
        func add(_ n: Int) { lock.withLock { recorded.append(n) } }
    }
}

final class OutboxStoreTests: XCTestCase {
    private func makeStore(cap: Int = 1 << 30) async throws -> (OutboxStore, TestDirectory) {
        let dir = try TestDirectory(prefix: "cro")
        let catalog = try StateDB(stateDirectory: dir.stateDir)
        return (try await OutboxStore.open(catalog: catalog, maxQueueBytes: cap), dir)
    }

    private func play(_ n: Int) -> OutboxRecord {
        OutboxRecord(
            id: String(format: "00000000-0000-4000-8000-%012d", n), kind: .play,
            body: #"{"eventId":"\#(n)","productId":"tr-1"}"#)
    }

    func testBatchesAreOldestFirstAndBounded() async throws {
        let (store, dir) = try await makeStore()
        defer { dir.remove() }
        for n in [5, 3, 9, 1, 7] { _ = try await store.insert([play(n)], at: Date()) }
        let batch = try await store.nextBatch(limit: 3)
        XCTAssertEqual(batch.map(\.id), [5, 3, 9].map { play($0).id }, "insertion order, not id order")
        let all = try await store.nextBatch(limit: 500).count
        XCTAssertEqual(all, 5)
    }

    func testDuplicatesCapAndCounters() async throws {
        let size = play(1).sizeBytes
        let (store, dir) = try await makeStore(cap: size * 2)
        defer { dir.remove() }
        let outcomes = try await store.insert([play(1), play(1), play(2), play(3)], at: Date())
        XCTAssertEqual(outcomes, [.stored, .duplicate, .stored, .queueFull(queuedBytes: size * 2)])
        XCTAssertEqual(store.snapshot.pending, 2)
        XCTAssertEqual(store.snapshot.pendingBytes, size * 2)
        // At the cap a known id is still a duplicate, not a refusal.
        let atCap = try await store.insert([play(2)], at: Date())
        XCTAssertEqual(atCap, [.duplicate])

        let sent = try await store.nextBatch(limit: 10)
        let attempt = DeliveryAttempt(startedAt: Date(), endedAt: Date(), records: 2, accepted: 1, rejected: 1, result: .delivered)
        let verdict = BatchVerdict(accepted: [sent[0].id], rejected: [.init(id: sent[1].id, reason: "no")])
        let applied = try await store.apply(verdict, sent: sent, attempt: attempt)
        XCTAssertEqual(applied.delivered, 1)
        XCTAssertEqual(applied.rejected.map(\.id), [sent[1].id])
        XCTAssertEqual(store.snapshot.pending, 0)
        XCTAssertEqual(store.snapshot.delivered, 1)
        XCTAssertEqual(store.snapshot.rejected, 1)
        XCTAssertEqual(store.snapshot.pendingBytes, 0)
        // Applying the same answer again changes nothing; delivered and rejected stay known.
        let again = try await store.apply(verdict, sent: sent, attempt: attempt)
        XCTAssertEqual(again.delivered, 0)
        let reRecorded = try await store.insert([play(1), play(2), play(3)], at: Date())
        XCTAssertEqual(reRecorded, [.duplicate, .duplicate, .stored])
        let nextIDs = try await store.nextBatch(limit: 10).map(\.id)
        XCTAssertEqual(nextIDs, [play(3).id], "rejected records are never sent again")
        let lastResult = try await store.lastAttempt()?.result
        XCTAssertEqual(lastResult, .delivered)
        let lastReason = try await store.recentRejections(limit: 5).first?["reason"]?.stringValue
        XCTAssertEqual(lastReason, "no")

        // Counters reload from the table.
        let reopened = try await OutboxStore.open(catalog: store.catalog, maxQueueBytes: size * 2)
        XCTAssertEqual(reopened.snapshot, store.snapshot)
    }

    /// A delivery run reads on after its last batch while that batch is still pending.
    func testBatchesReadOnAfterARowid() async throws {
        let (store, dir) = try await makeStore()
        defer { dir.remove() }
        _ = try await store.insert((1...5).map { play($0) }, at: Date())
        let first = try await store.nextBatch(limit: 2)
        XCTAssertEqual(first.map(\.id), [1, 2].map { play($0).id })
        let next = try await store.nextBatch(after: first[1].rowid, limit: 2)
        XCTAssertEqual(next.map(\.id), [3, 4].map { play($0).id })
        let last = try await store.nextBatch(after: next[1].rowid, limit: 2)
        XCTAssertEqual(last.map(\.id), [play(5).id])
        let none = try await store.nextBatch(after: last[0].rowid, limit: 2)
        XCTAssertTrue(none.isEmpty)
    }

    /// An answer is noted before the next request leaves; marking its records deletes the note.
    func testANotedAnswerIsMarkedAndTheNoteDeleted() async throws {
        let (store, dir) = try await makeStore()
        defer { dir.remove() }
        let (sent, attempt, verdict, note) = try await noteOneOfEach(store)
        let notes1 = try await notes(store)
        XCTAssertEqual(notes1, 1)
        XCTAssertEqual(store.snapshot.pending, 3, "noted, not yet marked")
        let lastResult = try await store.lastAttempt()?.result
        XCTAssertEqual(lastResult, .delivered, "the attempt is logged with the note")
        let applied = try await store.apply(noted: note, verdict, sent: sent, at: attempt.endedAt)
        XCTAssertEqual(applied.delivered, 1)
        XCTAssertEqual(applied.rejected.map(\.id), [sent[1].id])
        try await assertMarkedOneOfEach(store, sent: sent)
    }

    /// A note a crash left behind (the answer noted, its records not yet marked) is applied
    /// when the outbox opens: those records are not sent again.
    func testANoteLeftBehindIsAppliedWhenTheOutboxOpens() async throws {
        let (store, dir) = try await makeStore()
        defer { dir.remove() }
        let (sent, _, _, _) = try await noteOneOfEach(store)

        let reopened = try await OutboxStore.open(catalog: store.catalog, maxQueueBytes: 1 << 30)
        try await assertMarkedOneOfEach(reopened, sent: sent)
        let reason = try await reopened.recentRejections(limit: 5).first?["reason"]?.stringValue
        XCTAssertEqual(reason, "unknown product")
    }

    /// Three records sent in one batch and the origin's answer noted: the first accepted, the
    /// second rejected ("unknown product"), the third unanswered; nothing marked yet.
    private func noteOneOfEach(_ store: OutboxStore) async throws
        -> (sent: [PendingRecord], attempt: DeliveryAttempt, verdict: BatchVerdict, note: Int64)
    {
        _ = try await store.insert([play(1), play(2), play(3)], at: Date())
        let sent = try await store.nextBatch(limit: 10)
        let attempt = DeliveryAttempt(startedAt: Date(), endedAt: Date(), records: 3, accepted: 1, rejected: 1, result: .delivered)
        let verdict = BatchVerdict(
            accepted: [sent[0].id], rejected: [.init(id: sent[1].id, reason: "unknown product")],
            unanswered: [sent[2].id])
        return (sent, attempt, verdict, try await store.note(verdict, attempt: attempt))
    }

    /// `noteOneOfEach`'s answer applied: no note left, one record each delivered and rejected,
    /// and only the unanswered one still to send.
    private func assertMarkedOneOfEach(
        _ store: OutboxStore, sent: [PendingRecord],
        file: StaticString = #filePath, line: UInt = #line
    ) async throws {
        let left = try await notes(store)
        XCTAssertEqual(left, 0, "notes left", file: file, line: line)
        XCTAssertEqual(store.snapshot.pending, 1, file: file, line: line)
        XCTAssertEqual(store.snapshot.delivered, 1, file: file, line: line)
        XCTAssertEqual(store.snapshot.rejected, 1, file: file, line: line)
        let next = try await store.nextBatch(limit: 10).map(\.id)
        XCTAssertEqual(next, [sent[2].id], file: file, line: line)
    }

    private func notes(_ store: OutboxStore) async throws -> Int {
        try await store.catalog.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM playlogVerdicts") ?? -1 }
    }
}

final class RecordValidatorTests: XCTestCase {
    func testUUIDSyntax() {
        XCTAssertTrue(RecordValidator.isUUID("6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5b"))
        XCTAssertTrue(RecordValidator.isUUID("6F1C2A9E-3B4D-4E5F-8A7B-0C1D2E3F4A5B"))
        XCTAssertFalse(RecordValidator.isUUID("6f1c2a9e3b4d4e5f8a7b0c1d2e3f4a5b"))
        XCTAssertFalse(RecordValidator.isUUID("6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5g"))
        XCTAssertFalse(RecordValidator.isUUID(""))
    }

    func testRFC3339Syntax() {
        for good in ["2026-11-21T10:00:00Z", "2026-11-21T10:00:00.123Z", "2026-11-21T10:00:00.1+01:00", "2026-11-21T23:59:60-05:30"] {
            XCTAssertTrue(RecordValidator.isRFC3339(good), good)
        }
        for bad in [
            "2026-11-21", "2026-11-21T10:00Z", "2026-13-01T00:00:00Z", "2026-11-21T10:00:00", "2026-11-21T10:00:00.Z",
            "2026-11-21T10:00:00Zjunk", "yesterday", "2026-11-21T10:00:00+0100",
        ] {
            XCTAssertFalse(RecordValidator.isRFC3339(bad), bad)
        }
    }

    func testBodyIsTheEventAsSent() throws {
        let record = try RecordValidator.playEvent(params: ["event": Records.play(id: "6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5b")])
        XCTAssertEqual(record.id, "6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5b")
        let body = try JSONValue.parse(Array(record.body.utf8))
        XCTAssertEqual(body["productId"]?.stringValue, "tr-9-01")
        XCTAssertEqual(body["endPosition"]?.doubleValue, 180.5)
        XCTAssertEqual(body, Records.play(id: "6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5b").withSession(body["playbackSessionId"]!))
    }

    func testSettingsDefaultsAndRanges() throws {
        let defaults = try ReporterSettings(section: nil)
        XCTAssertEqual(defaults.maxQueueBytes, 256 << 20)
        XCTAssertEqual(defaults.batchSize, 500)
        XCTAssertEqual(defaults.retryInitialSeconds, 1)
        XCTAssertEqual(defaults.retryMaxSeconds, 300)
        XCTAssertEqual(try ReporterSettings(section: ["maxQueueBytes": 1000]).maxQueueBytes, 1000)
        XCTAssertThrowsError(try ReporterSettings(section: ["batchSize": 501]))
        XCTAssertThrowsError(try ReporterSettings(section: ["maxQueueBytes": 0]))
        XCTAssertThrowsError(try ReporterSettings(section: ["retryInitialSeconds": 10, "retryMaxSeconds": 5]))
        XCTAssertThrowsError(try ReporterSettings(section: ["maxQueueByte": 10]))
    }
}

extension JSONValue {
    fileprivate func withSession(_ session: JSONValue) -> JSONValue {
        guard var object = objectValue else { return self }
        object["playbackSessionId"] = session
        return .object(object)
    }
}
