import Foundation
import GRDB
import OriginClient
import Wire

/// `offline.status` and `offline.list`: a token's row with its file's progress, its license and
/// a re-offline under way, as the protocol shows them.
extension ProductStore {
    /// The order of `offline.list`.
    enum Order: Sendable {
        case requestedAt, newestFirst, productId, state

        var sql: String {
            switch self {
            case .requestedAt: "p.requestedAt"
            case .newestFirst: "p.requestedAt DESC"
            case .productId: "p.productId"
            case .state: "p.state, p.requestedAt"
            }
        }
    }

    /// `token`'s status; nil for a token never issued.
    func status(token: String) async throws -> JSONValue? {
        try await catalog.read { db in try Self.statusRows(db, where: "p.token = ?", [token]).first }
    }

    /// The statuses of the tokens in `state` (every one not deleted when nil), in `order`.
    func statuses(state: String?, order: Order) async throws -> [JSONValue] {
        try await catalog.read { db in
            try Self.statusRows(
                db, where: state == nil ? "p.state != 'deleted'" : "p.state = ?", state.map { [$0] } ?? [],
                order: order.sql)
        }
    }

    private static func statusRows(_ db: Database, where condition: String, _ arguments: [String], order: String = "p.requestedAt") throws -> [JSONValue] {
        try Row.fetchAll(
            db,
            sql: """
                SELECT p.*, f.bytesOnDisk, f.sizeBytes, f.state AS fileState, f.localPath AS mainLocalPath, m.fileId AS mainFileId,
                       m.manifestType, m.title FROM offlineProducts p
                LEFT JOIN mediaItems m ON m.id = p.productId LEFT JOIN files f ON f.id = m.fileId
                WHERE \(condition) ORDER BY \(order)
                """, arguments: StatementArguments(arguments)
        ).map { row in
            let state: String = row["state"]
            let size: Int64? = row["sizeBytes"]
            var bytes: Int64 = row["bytesOnDisk"] ?? 0
            if state == "deleted" { bytes = 0 }
            let progress = state == "cached" ? 100 : (size.map { $0 > 0 ? Double(bytes * 100 / $0) : 0 } ?? 0)
            func date(_ key: String) -> JSONValue { row.date(key).map(UTCTimestamp.rfc3339).map(JSONValue.string) ?? .null }
            var fields: [String: JSONValue] = [
                "token": .string(row["token"]), "requestedProductId": .string(row["requestedProductId"]),
                "productId": (row["productId"] as String?).map(JSONValue.string) ?? .null,
                "productType": .string(row["productType"]), "state": .string(state), "progress": .number(progress),
                "bytesOnDisk": .number(Double(bytes)), "sizeBytes": size.map { .number(Double($0)) } ?? .null,
                "requestedAt": date("requestedAt"), "startedAt": date("startedAt"), "endedAt": date("endedAt"),
                "offlineValidUntil": date("offlineValidUntil"),
                "error": (row["error"] as String?).map(JSONValue.string) ?? .null,
                "reason": (row["reason"] as String?).map(JSONValue.string) ?? .null,
                "quality": (row["quality"] as String?).map(JSONValue.string) ?? .null,
                "allowCellular": .bool(row["allowCellular"] as Bool? ?? false),
                "now": .bool(row["downloadNow"] as Bool? ?? false),
                "manifestHash": (row["manifestHash"] as String?).map(JSONValue.string) ?? .null,
                "offlineRevalidateAt": date("offlineRevalidateAt"), "revalidatedAt": date("revalidatedAt"),
                "revalidationError": (row["revalidationError"] as String?).map(JSONValue.string) ?? .null,
            ]
            // A product with more files than one (an HLS presentation, images): progress over all
            // of them, segments done of total, images, and the HLS choice kept in `options`.
            if state != "deleted", let productId = row["productId"] as String?,
                let more = try ProductFileStore.statusFields(productId: productId, mainFileId: row["mainFileId"], db: db)
            {
                fields.merge(more) { _, new in new }
                if state == "cached" { fields["progress"] = 100 }
            }
            let options = (row["options"] as String?).flatMap({ try? JSONValue.parse(Array($0.utf8)) })?.objectValue
            // Brightcove's token properties: the display name (the app's, else the product's
            // title, else its id), the app's referenceId (TIDAL), the URL the content came from
            // and where its main file is, relative to the state directory.
            let properties = TokenProperties(options: options)
            fields["displayName"] = .string(properties.displayName ?? (row["title"] as String?) ?? (row["requestedProductId"] as String))
            fields["referenceId"] = properties.referenceId.map(JSONValue.string) ?? .null
            fields["onlineSourceURL"] = properties.onlineSourceURL.map(JSONValue.string) ?? .null
            fields["filePath"] = state == "deleted" ? .null : (row["mainLocalPath"] as String?).map { .string("media/" + $0) } ?? .null
            if (row["manifestType"] as String?) == "hls", let object = options {
                fields["manifestType"] = "hls"
                for key in ["variant", "audioLanguages", "subtitleLanguages", "bitrate", "prepositionSeconds"] {
                    if let value = object[key] { fields[key] = value }
                }
            }
            // Brightcove: request time and expiry of the license; absent when there is none.
            if let license = try LicenseStore.statusJSON(licenseId: row["licenseId"], db: db) { fields["license"] = license }
            if let staged = (row["staged"] as String?).flatMap(StagedRevision.decode) {
                let file = try Row.fetchOne(db, sql: "SELECT state, bytesOnDisk FROM files WHERE id = ?", arguments: [staged.fileId])
                fields["staged"] = [
                    "productId": .string(staged.item.id), "manifestHash": .string(staged.manifestHash),
                    "sizeBytes": .number(Double(staged.item.sizeBytes)),
                    "bytesOnDisk": .number(Double(file?["bytesOnDisk"] as Int64? ?? 0)),
                    "fileState": (file?["state"] as String?).map(JSONValue.string) ?? .null,
                ]
            }
            return .object(fields)
        }
    }
}
