import Foundation
import TestSupport
import Wire
import XCTest

@testable import reporter

/// Every `ReporterEvent` goes on the wire as docs/protocol.md says: topic `reporter`, a type
/// with a row in the Reporter section's events table, and only fields that row names.
final class ReporterEventTests: XCTestCase {
    /// One event of each case, for every kind of record.
    private var samples: [ReporterEvent] {
        let rejection = BatchVerdict.Rejection(id: "e-1", reason: "unknown product")
        return RecordKind.allCases.flatMap { kind -> [ReporterEvent] in
            [.delivered(kind, count: 3, pending: 1), .rejected(kind, [rejection])]
        } + [
            .deliveryFailed(error: ["name": "OriginUnreachable", "message": "no answer"], consecutiveFailures: 2, retryInSeconds: 4, pending: 5),
            .queueFull(queuedBytes: 100, maxQueueBytes: 100),
            .queueAvailable(queuedBytes: 10, maxQueueBytes: 100),
        ]
    }

    func testEveryReporterEventCarriesTheFieldsTheProtocolDocuments() throws {
        let rows = try Self.documentedReporterEvents()
        for event in samples {
            XCTAssertEqual(event.topic, "reporter", event.type)
            let row = try XCTUnwrap(rows[event.type], "\(event.type) is not documented")
            for field in event.data.keys {
                XCTAssertTrue(row.contains("`\(field)`") || row.contains("{\(field)") || row.contains(" \(field)"), "\(event.type): \(field) not in \(row)")
            }
        }
        XCTAssertEqual(Set(rows.keys), Set(samples.map(\.type)), "documented reporter events and the cases that produce them")
    }

    func testRejectionsNameTheRecordsByTheirKindsId() {
        let rejection = BatchVerdict.Rejection(id: "c-1", reason: "bad")
        let data = ReporterEvent.rejected(.consumption, [rejection]).data
        XCTAssertEqual(data["recordIds"], .array(["c-1"]))
        XCTAssertEqual(data["reasons"], .array(["bad"]))
        XCTAssertEqual(ReporterEvent.rejected(.play, [rejection]).data["eventIds"], .array(["c-1"]))
    }

    /// The rows of docs/protocol.md's reporter events table: each type it names, with its data cell.
    private static func documentedReporterEvents() throws -> [String: String] {
        let rows = try XCTUnwrap(ProtocolDoc.tableRows(after: "**Events** (topic `reporter`):"))
        var documented: [String: String] = [:]
        for cells in rows {
            let types = cells[1].split(separator: "`", omittingEmptySubsequences: false).enumerated().compactMap { index, part in
                index % 2 == 1 ? String(part) : nil
            }
            for type in types { documented[type] = cells[2] }
        }
        return documented
    }
}
