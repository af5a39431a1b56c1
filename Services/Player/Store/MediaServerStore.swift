import Foundation
import GRDB
import OriginClient
import StateDB
import Wire

/// What the local media server reads from the catalog: a product's files as the downloader
/// listed them (`mediaItems.fileId` and `productFiles`), whether it may be served, and a content
/// key — the only place the player touches `licenses.keys`, and only for a product that is
/// `OFFLINED_AND_VALID` (or still downloading, or prepositioned in part, under a license in force).
struct MediaServerStore: Sendable {
    let catalog: StateDB
    let origin: OriginClient?

    /// One file of a product as the server sees it.
    struct ServedFile: Sendable, Equatable {
        /// The name under `/p/{productId}/` (the main file: `master.m3u8`, or its file name).
        var name: String
        var role: String
        var localPath: String
        /// The origin URL it was fetched from, for resolving a playlist's relative URIs.
        var url: String?
        var urlPath: String
        var state: String
        var bytesOnDisk: Int64
        var sizeBytes: Int64?
        var mimeType: String?

        var isVerified: Bool { state == "verified" }
    }

    /// A product the server may be asked for.
    struct ServedProduct: Sendable {
        var productId: String
        var manifestType: String
        /// Whether it may be played now, and until when (the rule the engine plays by).
        var window: PlayableWindow
        /// `offlineProducts.state` of the newest request (nil: a station item).
        var productState: String?
        var main: ServedFile
        var files: [ServedFile]
        /// Playlists of renditions being added to a presentation already held: left out of its
        /// master playlist until the product is `cached` again.
        var adding: Set<String> = []
        /// The catalog's trusted-time anchor read with it: the window is judged again from it
        /// (`judgedNow`) when the product is kept between requests.
        var anchor: TrustedClock.Anchor?
        /// Every file of the product is listed (not only the one a request named).
        var listsEveryFile = false

        var isHLS: Bool { manifestType == "hls" }
        /// Being downloaded (or waiting to be): served as far as it is on disk.
        var isDownloading: Bool { ["queued", "downloading", "idle", "paused"].contains(productState ?? "") }
        /// Prepositioned in part (`partiallyCached`) and within its offline window and license:
        /// served whole, the files not on disk fetched from the origin.
        var isPartial: Bool { productState == "partiallyCached" && window.holds }
        var validity: OfflineAvailability.State { window.validity.state }
        /// Its license or offline window has ended: `OFFLINED_BUT_NOT_VALID`, or a download under
        /// way or a product prepositioned in part past them. Refused on every path.
        var hasEnded: Bool {
            validity == .offlinedButNotValid || (!window.holds && (isDownloading || productState == "partiallyCached"))
        }
        /// Served from the device: offlined and valid, or (within its license and window) still
        /// downloading or prepositioned in part.
        var isServed: Bool { !hasEnded && (validity == .offlinedAndValid || isDownloading || isPartial) }
        /// Every file of the product, main one first.
        var all: [ServedFile] { [main] + files }

        func file(named name: String) -> ServedFile? { all.first { $0.name == name } }
        func file(urlPath: String) -> ServedFile? { all.first { $0.urlPath == urlPath } }

        /// The same product with its window judged at the trusted time now: the catalog's
        /// anchor as read with it and the origin's newest server time (`PlayClock`'s rule).
        func judgedNow(origin: OriginClient?) -> ServedProduct {
            var judged = self
            judged.window = PlayableWindow.judged(
                window.validity,
                at: PlayClock.trusted(anchor: anchor, sample: origin?.lastServerTime, readings: .current()))
            return judged
        }
    }

    /// The product `productId` (requested or actual id) with its files; nil when the catalog
    /// holds no file for it. With `name`, only the file of that name is listed, unless it is a
    /// playlist, whose rewriting needs them all (a segment request reads one row, not hundreds).
    func product(_ productId: String, name: String? = nil) async throws -> ServedProduct? {
        try await catalog.read { [origin] db in
            guard let local = try OfflineAvailability.localFile(productId: productId, db: db),
                let main = try Row.fetchOne(
                    db, sql: "SELECT f.* FROM mediaItems m JOIN files f ON f.id = m.fileId WHERE m.id = ?",
                    arguments: [local.actualProductId])
            else { return nil }
            let request = try Row.fetchOne(
                db,
                sql: """
                    SELECT state, json_extract(options, '$.adding') AS adding FROM offlineProducts
                    WHERE requestedProductId = ? OR productId = ? ORDER BY requestedAt DESC LIMIT 1
                    """, arguments: [productId, local.actualProductId])
            let productState: String? = request?["state"]
            let adding = (request?["adding"] as String?).flatMap { try? JSONValue.parse(Array($0.utf8)) }?.arrayValue?.compactMap(\.stringValue) ?? []
            let isHLS = local.item.manifestType == "hls"
            let mainName = isHLS ? "master.m3u8" : String((main["localPath"] as String).split(separator: "/").last ?? "media")
            var files: [ServedFile] = []
            if let name, name != mainName {
                files = try Row.fetchAll(
                    db,
                    sql: """
                        SELECT pf.name, pf.role, f.* FROM productFiles pf JOIN files f ON f.id = pf.fileId WHERE pf.productId = ? AND pf.name = ?
                        """, arguments: [local.actualProductId, name]
                ).map { Self.served($0, name: $0["name"], role: $0["role"]) }
            }
            let listsEveryFile = name == nil || name == mainName || files.first?.role == "playlist"
            if listsEveryFile {
                files = try Row.fetchAll(
                    db,
                    sql: """
                        SELECT pf.name, pf.role, f.* FROM productFiles pf JOIN files f ON f.id = pf.fileId WHERE pf.productId = ? ORDER BY pf.position
                        """, arguments: [local.actualProductId]
                ).map { Self.served($0, name: $0["name"], role: $0["role"]) }
            }
            let anchor = try TrustedClock.load(db: db)
            let now = PlayClock.trusted(anchor: anchor, sample: origin?.lastServerTime, readings: .current())
            var served = ServedProduct(
                productId: local.actualProductId, manifestType: local.item.manifestType,
                window: try PlayableWindow.read(productId: productId, db: db, now: now),
                productState: productState, main: Self.served(main, name: mainName, role: "main"), files: files)
            served.adding = Set(adding)
            served.anchor = anchor
            served.listsEveryFile = listsEveryFile
            return served
        }
    }

    /// The 16 bytes of `keyId` for `productId`, only while the product may be played: its state
    /// `OFFLINED_AND_VALID`, or a download under way (or a product prepositioned in part) whose
    /// license and offline window hold now (`PlayableWindow`). nil otherwise (the server answers 403).
    func key(productId: String, keyId: String) async throws -> [UInt8]? {
        try await catalog.read { [origin] db in
            let window = try PlayableWindow.read(productId: productId, origin: origin, db: db)
            guard window.holds,
                let row = try Row.fetchOne(
                    db,
                    sql: """
                        SELECT p.state, l.keys, \(OfflineAvailability.addingTracksSQL) AS adding
                        FROM offlineProducts p JOIN licenses l ON l.id = p.licenseId
                        WHERE (p.productId = ? OR p.requestedProductId = ?) AND p.state != 'deleted' ORDER BY p.requestedAt DESC LIMIT 1
                        """, arguments: [productId, productId])
            else { return nil }
            let state: String = row["state"]
            let valid =
                state == "cached" || (row["adding"] as Bool?) == true
                ? window.validity.state == .offlinedAndValid
                : ["queued", "downloading", "idle", "paused", "partiallyCached"].contains(state)
            guard valid, let keys = row["keys"] as Data?,
                let object = try? JSONSerialization.jsonObject(with: keys) as? [String: String],
                let encoded = object[keyId], let bytes = Data(base64Encoded: encoded), bytes.count == 16
            else { return nil }
            return Array(bytes)
        }
    }

    private static func served(_ row: Row, name: String, role: String) -> ServedFile {
        ServedFile(
            name: name, role: role, localPath: row["localPath"], url: row["url"], urlPath: row["urlPath"], state: row["state"],
            bytesOnDisk: row["bytesOnDisk"], sizeBytes: row["sizeBytes"], mimeType: row["mimeType"])
    }
}
