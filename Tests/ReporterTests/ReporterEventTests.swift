import Foundation
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
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("docs/protocol.md"), encoding: .utf8)
        let start = try XCTUnwrap(text.range(of: "**Events** (topic `reporter`):"))
        let rows = text[start.upperBound...].split(separator: "\n").drop { !$0.hasPrefix("|") }.prefix { $0.hasPrefix("|") }.dropFirst(2)
        var documented: [String: String] = [:]
        for row in rows {
            let cells = row.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            let types = cells[1].split(separator: "`", omittingEmptySubsequences: false).enumerated().compactMap { index, part in
                index % 2 == 1 ? String(part) : nil
            }
            for type in types { documented[type] = cells[2] }
        }
        return documented
    }
}
