import Foundation
import GRDB
import OriginClient
import Wire

/// The validity a playbackinfo answer grants (TIDAL `offlineRevalidateAt`, `offlineValidUntil`).
struct Validity: Sendable, Codable, Equatable {
    var revalidateAt: Date?
    var validUntil: Date?

    init(_ info: JSONValue) {
        revalidateAt = info["offlineRevalidateAt"]?.stringValue.flatMap(ServerTimeSample.parseRFC3339)
        validUntil = info["offlineValidUntil"]?.stringValue.flatMap(ServerTimeSample.parseRFC3339)
    }

    func store(token: String, db: Database) throws {
        try db.execute(sql: """
            UPDATE offlineProducts SET offlineRevalidateAt = ?, offlineValidUntil = ?, revalidatedAt = ?, revalidationError = NULL
            WHERE token = ?
            """, arguments: [revalidateAt, validUntil, Date(), token])
    }
}
