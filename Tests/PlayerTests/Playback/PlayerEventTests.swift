import Foundation
import TestSupport
import Wire
import XCTest

@testable import player

/// Every `PlayerEvent` goes on the wire as docs/protocol.md says: its topic, its type, and the
/// fields of its `data` (the table "Events (topic `player`)" of the Player section).
final class PlayerEventTests: XCTestCase {
    private let product = MediaProduct(productId: "tr-1", referenceId: "ref-1")
    private let context = PlaybackContext(
        track: TrackInfo(
            requestedProductId: "tr-1", actualProductId: "tr-1", audioQuality: "HIGH",
            durationSeconds: 30, offline: false),
        playbackSessionId: "session-1", referenceId: "ref-1", startAssetPosition: 0)

    /// One event of each case, every optional field given.
    private var samples: [PlayerEvent] {
        var failure = PlayerError(.sourceFailed, "no answer").rpcError
        failure.details["transportError"] = .string("ConnectionFailed")
        return [
            .playbackStateChanged(.playing),
            .mediaProductTransition(previous: nil, active: product, context: context),
            .playbackQualityChanged(context),
            .playbackFailed(failure, product: product),
            .outputUnavailable(
                PlayerError(.outputUnavailable, "cannot open").rpcError, reason: "OpenFailed: no card", device: "default",
                product: product),
            .outputAvailable(device: "default"),
            .streamingPrivilegesRevoked(otherDevice: "kitchen", product: product),
            .availability(.available, origin: "https://origin.test", localStations: 2),
            .availability(.offlineOnly, origin: "https://origin.test", localStations: 2),
            .availability(.notAvailable, origin: "https://origin.test", localStations: 0),
        ]
    }

    func testEveryPlayerEventCarriesTheFieldsTheProtocolDocuments() throws {
        let documented = try Self.documentedPlayerEvents()
        for event in samples {
            XCTAssertEqual(event.topic, "player", event.type)
            // An error event is named like its error; one row documents those with no row of their own.
            let isError = PlayerError.Code.all.contains { $0.name == event.type }
            let fields = try XCTUnwrap(documented[event.type] ?? (isError ? documented["error"] : nil), "\(event.type) is not documented")
            XCTAssertEqual(Set(event.data.objectValue.map { Array($0.keys) } ?? []), fields, event.type)
        }
        let produced = Set(samples.map(\.type)).union(["error"])
        XCTAssertEqual(Set(documented.keys).subtracting(produced), [], "documented player events no case produces")
    }

    func testMetricEventsGoOnTheirOwnTopic() {
        for name in MetricEvent.Name.allCases {
            let event = PlayerEvent.metric(
                MetricEvent(eventId: "e-1", name: name, productId: "tr-1", streamingSessionId: "session-1", at: "2027-01-15T12:00:00Z", payload: [:]))
            XCTAssertEqual(event.topic, "metrics")
            XCTAssertEqual(event.type, name.eventType)
            XCTAssertEqual(event.data, event.metricJSON)
        }
    }

    /// The rows of docs/protocol.md's player events table: each type it names (the row of error
    /// events as `error`) with the fields of its data.
    private static func documentedPlayerEvents() throws -> [String: Set<String>] {
        let rows = try XCTUnwrap(ProtocolDoc.tableRows(after: "Events (topic `player`), in the order a client sees them:"))
        var documented: [String: Set<String>] = [:]
        for cells in rows {
            let fields = Set(names(in: cells[2], initial: "a"..."z"))
            let types = cells[1].trimmingCharacters(in: .whitespaces).hasPrefix("error") ? ["error"] : names(in: cells[1], initial: "A"..."Z")
            for type in types { documented[type] = fields }
        }
        return documented
    }

    /// The single words in backticks of `cell` that start within `initial`.
    private static func names(in cell: String, initial: ClosedRange<Character>) -> [String] {
        cell.split(separator: "`", omittingEmptySubsequences: false).enumerated().compactMap { index, part in
            guard index % 2 == 1, let first = part.first, initial.contains(first), part.allSatisfy(\.isLetter) else { return nil }
            return String(part)
        }
    }
}

extension PlayerEvent {
    fileprivate var metricJSON: JSONValue? {
        guard case .metric(let event) = self else { return nil }
        return event.json
    }
}
