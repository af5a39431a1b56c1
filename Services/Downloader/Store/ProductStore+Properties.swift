import Foundation
import GRDB
import Wire

/// A token's properties and HLS choice as kept in `offlineProducts.options` (`TokenProperties`,
/// `HLSChoice`), read back for a request again for the token, and the `referenceId`s the
/// events loop back.
extension ProductStore {
    /// What a token holds that a request again for it builds on.
    struct Held: Sendable {
        var options: [String: JSONValue]
        var quality: String?
        var manifestHash: String?
        /// `hls` for a presentation, else progressive (nil before the content was planned).
        var manifestType: String?
        /// The names of the product's listed files (`productFiles.name`).
        var fileNames: Set<String>
    }

    func held(token: String) async throws -> Held? {
        try await catalog.read { db in
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: """
                        SELECT p.options, p.quality, p.manifestHash, p.productId, m.manifestType FROM offlineProducts p
                        LEFT JOIN mediaItems m ON m.id = p.productId WHERE p.token = ?
                        """, arguments: [token])
            else { return nil }
            let options = (row["options"] as String?).flatMap { try? JSONValue.parse(Array($0.utf8)) }?.objectValue ?? [:]
            let names =
                try (row["productId"] as String?).map {
                    Set(try String.fetchAll(db, sql: "SELECT name FROM productFiles WHERE productId = ?", arguments: [$0]))
                } ?? []
            return Held(
                options: options, quality: row["quality"], manifestHash: row["manifestHash"],
                manifestType: row["manifestType"], fileNames: names)
        }
    }

    /// A request again for a token that names a display name or reference id: kept in its options.
    func setProperties(token: String, _ properties: TokenProperties) async throws {
        var patch: [String: JSONValue] = [:]
        properties.apply(to: &patch)
        guard !patch.isEmpty else { return }
        let text = String(decoding: JSONValue.object(patch).serialized(), as: UTF8.self)
        try await catalog.write { db in
            try db.execute(
                sql: "UPDATE offlineProducts SET options = json_patch(COALESCE(options, '{}'), ?) WHERE token = ?",
                arguments: [text, token])
        }
    }

    /// The `referenceId` of every token that has one, for the events to loop back after a restart.
    func referenceIds() async throws -> [String: String] {
        try await catalog.read { db in
            var all: [String: String] = [:]
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT token, json_extract(options, '$.referenceId') AS referenceId FROM offlineProducts
                    WHERE options IS NOT NULL AND json_extract(options, '$.referenceId') IS NOT NULL
                    """)
            {
                all[row["token"]] = row["referenceId"]
            }
            return all
        }
    }

    /// SQL: the `options` of a product that is `cached` again, without the renditions it was adding
    /// (`adding`, the names of their playlists, which the media server leaves out until then).
    static let optionsOnceCachedSQL = "CASE WHEN ? = 'cached' THEN json_remove(options, '$.adding') ELSE options END"

    /// `options` (JSON text) without `adding`.
    static func withoutAdding(_ options: String?) -> String? {
        guard let options, var object = (try? JSONValue.parse(Array(options.utf8)))?.objectValue, object["adding"] != nil else { return options }
        object.removeValue(forKey: "adding")
        return String(decoding: JSONValue.object(object).serialized(), as: UTF8.self)
    }
}
