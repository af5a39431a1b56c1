import Foundation
import GRDB
import StateDB

/// What the player reads and writes of the downloader's stations: which are playable from the
/// device alone (items with a verified file) and which items were heard.
struct LocalStationStore: Sendable {
    let catalog: StateDB

    /// A station's name and its items with a verified file, in station order; nil when the
    /// device does not hold the station.
    func playable(stationId: String) async throws -> (name: String, items: [String])? {
        try await catalog.read { db -> (name: String, items: [String])? in
            guard let name = try String.fetchOne(db, sql: "SELECT name FROM stations WHERE id = ?", arguments: [stationId]) else {
                return nil
            }
            let items = try String.fetchAll(
                db,
                sql: """
                    SELECT si.itemId FROM stationItems si
                    JOIN mediaItems m ON m.id = si.itemId JOIN files f ON f.id = m.fileId
                    WHERE si.stationId = ? AND f.state = 'verified'
                    ORDER BY si.position, si.itemId
                    """, arguments: [stationId])
            return (name, items)
        }
    }

    /// The first station (by id) with a verified item: what plays when a streaming station
    /// cannot be reached. Nil when the device holds none.
    func firstPlayable() async throws -> String? {
        try await catalog.read { db in
            try String.fetchOne(
                db,
                sql: """
                    SELECT si.stationId FROM stationItems si
                    JOIN mediaItems m ON m.id = si.itemId JOIN files f ON f.id = m.fileId WHERE f.state = 'verified'
                    ORDER BY si.stationId LIMIT 1
                    """)
        }
    }

    /// Stations with at least one verified item: playable with no network at all.
    func playableCount() async throws -> Int {
        try await catalog.read { db in
            try Int.fetchOne(
                db,
                sql: """
                    SELECT COUNT(DISTINCT si.stationId) FROM stationItems si
                    JOIN mediaItems m ON m.id = si.itemId JOIN files f ON f.id = m.fileId WHERE f.state = 'verified'
                    """) ?? 0
        }
    }

    /// Marks a station item heard (`stationItems.playedAt`), which the downloader sends as
    /// `played` at the next sync.
    func markPlayed(stationId: String, itemId: String, at date: Date) async throws {
        try await catalog.write { db in
            try db.execute(
                sql: "UPDATE stationItems SET playedAt = ? WHERE stationId = ? AND itemId = ?",
                arguments: [date.databaseText, stationId, itemId])
        }
    }
}
