import Foundation
import GRDB
import StateDB
import Wire

/// `offline.forecast`: how much of what is on the device can still be played, and when the
/// box would fall silent if the network stayed away from now on (docs/protocol.md).
///
/// Playable means what `OfflineAvailability` calls offlined and valid at the trusted time: an
/// item of a station that has not expired, or a product offlined with `offline.add` within its
/// offline window and license, whose file is verified. Each item counts once, for its duration,
/// and lasts until the latest of its stations' and products' expiries; `silentAt` is when the
/// last of them ends, nil when one of them never expires (or nothing is playable).
struct OfflineForecast: Sendable, Equatable {
    var playableSeconds: Double
    var playableItems: Int
    var silentAt: Date?

    var json: JSONValue {
        [
            "playableSeconds": .number((playableSeconds * 1000).rounded() / 1000),
            "playableItems": .number(Double(playableItems)),
            "silentAt": silentAt.map { .string(UTCTimestamp.rfc3339($0)) } ?? .null,
        ]
    }

    /// Seconds from `now` until `silentAt`: 0 with nothing playable, +infinity when nothing expires.
    func secondsUntilSilence(now: Date) -> Double {
        guard playableItems > 0 else { return 0 }
        guard let silentAt else { return .infinity }
        return max(0, silentAt.timeIntervalSince(now))
    }

    static func read(_ catalog: StateDB, now: Date) async throws -> OfflineForecast {
        try await catalog.read { db in try compute(db, now: now) }
    }

    static func compute(_ db: Database, now: Date) throws -> OfflineForecast {
        // Per item: its duration, and until when it lasts (nil: for ever).
        var items: [String: (duration: Double, until: Date?)] = [:]
        func add(_ id: String, _ duration: Double?, _ until: Date?) {
            if let until, until <= now { return }
            if let known = items[id] {
                let later: Date? = (known.until == nil || until == nil) ? nil : max(known.until!, until!)
                items[id] = (known.duration, later)
            } else {
                items[id] = (duration ?? 0, until)
            }
        }
        for row in try Row.fetchAll(
            db,
            sql: """
                SELECT m.id, m.durationSeconds, p.offlineValidUntil, l.expiresAt AS licenseExpiresAt
                FROM offlineProducts p
                JOIN mediaItems m ON m.id = p.productId JOIN files f ON f.id = m.fileId
                LEFT JOIN licenses l ON l.id = p.licenseId
                WHERE f.state = 'verified'
                  AND (p.state = 'cached' OR (\(OfflineAvailability.addingTracksSQL) AND p.state IN ('queued', 'downloading', 'idle', 'paused', 'failed')))
                """)
        {
            let ends = [row.date("offlineValidUntil"), row.date("licenseExpiresAt")].compactMap { $0 }
            add(row["id"], row["durationSeconds"], ends.min())
        }
        for row in try Row.fetchAll(
            db,
            sql: """
                SELECT m.id, m.durationSeconds, s.expiresAt FROM stationItems si
                JOIN stations s ON s.id = si.stationId
                JOIN mediaItems m ON m.id = si.itemId JOIN files f ON f.id = m.fileId
                WHERE f.state = 'verified'
                """)
        {
            add(row["id"], row["durationSeconds"], row.date("expiresAt"))
        }
        let seconds = items.values.reduce(0) { $0 + $1.duration }
        let ends = items.values.map(\.until)
        let silentAt: Date? = ends.isEmpty || ends.contains { $0 == nil } ? nil : ends.compactMap { $0 }.max()
        return OfflineForecast(playableSeconds: seconds, playableItems: items.count, silentAt: silentAt)
    }
}
