import Foundation
import GRDB

/// The one answer to "may this product be played from the device, and from which file?", shared by
/// the downloader (`offline.state`) and the player (source selection), so the two never disagree.
/// Both read the catalog directly: the player must decide without any other service running.
public enum OfflineAvailability {
    /// TIDAL's three offline states, spelled as on the wire.
    public enum State: String, Sendable, Codable {
        case notOfflined = "NOT_OFFLINED"
        case offlinedAndValid = "OFFLINED_AND_VALID"
        case offlinedButNotValid = "OFFLINED_BUT_NOT_VALID"
    }

    /// Where a product's bytes are on disk, and how far the download has got.
    public struct LocalFile: Sendable, Equatable {
        /// The product the file holds (after a replacement, not the one asked for).
        public var actualProductId: String
        /// Relative to the media directory; `relativePath + ".part"` while downloading.
        public var relativePath: String
        /// `files.state`: pending, partial, verified or corrupt.
        public var fileState: String
        public var bytesOnDisk: Int64
        public var sizeBytes: Int64?
        public var sha256: String?
        public var mimeType: String?
        public var item: MediaItemInfo

        /// True once the bytes are complete, checked and renamed to their final name.
        public var isVerified: Bool { fileState == "verified" }
    }

    /// A product's offline state at a time, and the instant that state ends.
    public struct Validity: Sendable, Equatable {
        public var state: State
        /// When the product stops being playable from the device (trusted time); nil: no end.
        /// An offlined product: the earlier of its offline window's end (`offlineValidUntil`)
        /// and its license's `expiresAt`. A station item: the latest `expiresAt` of the stations
        /// holding it. A product not offlined yet: the same two ends of its newest request not
        /// deleted (a download under way, a product prepositioned in part), nil without one.
        public var until: Date?

        public init(state: State, until: Date?) {
            self.state = state
            self.until = until
        }

        /// Playable from the device at `now` as far as time goes: no end, or an end still to come.
        public func holds(at now: Date) -> Bool { until.map { $0 > now } ?? true }

        /// The same validity at another trusted time: an offlined product is valid while its end
        /// is to come, and no longer after. `validity(productId:db:now:)` depends on `now` only
        /// through this, so a validity read once can be judged again as time passes.
        public func judged(at now: Date) -> Validity {
            switch state {
            case .offlinedAndValid, .offlinedButNotValid:
                Validity(state: holds(at: now) ? .offlinedAndValid : .offlinedButNotValid, until: until)
            case .notOfflined:
                self
            }
        }
    }

    /// SQL condition on `offlineProducts p`: a presentation that was `cached` and is downloading
    /// renditions added to it (`options.adding`, the playlists the media server leaves out until
    /// they are complete). It stays offlined on what it held, also when the addition fails.
    public static let addingTracksSQL = "json_extract(p.options, '$.adding') IS NOT NULL"

    /// The validity of `productId` (requested or actual id) at `now`.
    ///
    /// Offlined means: a product offlined with `offline.add` that reached `cached` (or, adding
    /// renditions, had reached it: `addingTracksSQL`), or an item of a station whose file is
    /// verified. Valid means: `now` is before `Validity.until`. `now` is the caller's trusted
    /// time, never the raw device clock alone.
    public static func state(productId: String, db: Database, now: Date) throws -> State {
        try validity(productId: productId, db: db, now: now).state
    }

    /// `state` with the instant it ends: the one rule for "is this product valid now, and until
    /// when", so whoever stops a product at its end and whoever refuses it afterwards agree.
    public static func validity(productId: String, db: Database, now: Date) throws -> Validity {
        if let product = try Row.fetchOne(
            db,
            sql: """
                SELECT p.offlineValidUntil, l.expiresAt AS licenseExpiresAt FROM offlineProducts p
                JOIN mediaItems m ON m.id = p.productId JOIN files f ON f.id = m.fileId
                LEFT JOIN licenses l ON l.id = p.licenseId
                WHERE (p.requestedProductId = ? OR p.productId = ?) AND f.state = 'verified'
                  AND (p.state = 'cached' OR (\(addingTracksSQL) AND p.state IN ('queued', 'downloading', 'idle', 'paused', 'failed')))
                ORDER BY p.requestedAt DESC LIMIT 1
                """, arguments: [productId, productId])
        {
            // Both must hold: the offline window (TIDAL offlineValidUntil) and, for licensed
            // content, the license (a Brightcove rental ends at its expiresAt; a purchase never).
            let until = earliest(product.date("offlineValidUntil"), product.date("licenseExpiresAt"))
            return Validity(state: .offlinedAndValid, until: until).judged(at: now)
        }
        let stationExpiries = try Row.fetchAll(
            db,
            sql: """
                SELECT s.expiresAt FROM stationItems si
                JOIN stations s ON s.id = si.stationId
                JOIN mediaItems m ON m.id = si.itemId JOIN files f ON f.id = m.fileId
                WHERE si.itemId = ? AND f.state = 'verified'
                """, arguments: [productId]
        ).map { $0.date("expiresAt") }
        guard !stationExpiries.isEmpty else {
            return Validity(state: .notOfflined, until: try requestEnd(productId: productId, db: db))
        }
        // Valid while any station holding it is; a station without an expiry never ends.
        let until = stationExpiries.contains(nil) ? nil : stationExpiries.compactMap { $0 }.max()
        return Validity(state: .offlinedAndValid, until: until).judged(at: now)
    }

    /// The end of the newest request of `productId` not deleted: the earlier of its offline
    /// window's end and its license's expiry; nil without a request or an end.
    private static func requestEnd(productId: String, db: Database) throws -> Date? {
        guard
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT p.offlineValidUntil, l.expiresAt FROM offlineProducts p LEFT JOIN licenses l ON l.id = p.licenseId
                    WHERE (p.productId = ? OR p.requestedProductId = ?) AND p.state != 'deleted' ORDER BY p.requestedAt DESC LIMIT 1
                    """, arguments: [productId, productId])
        else { return nil }
        return earliest(row.date("offlineValidUntil"), row.date("expiresAt"))
    }

    private static func earliest(_ a: Date?, _ b: Date?) -> Date? {
        switch (a, b) {
        case let (a?, b?): min(a, b)
        case let (a?, nil): a
        case let (nil, b?): b
        case (nil, nil): nil
        }
    }

    /// The file holding `productId` (requested or actual id), whether complete or still downloading.
    /// Nil when the catalog knows no file for it.
    public static func localFile(productId: String, db: Database) throws -> LocalFile? {
        let actual =
            try String.fetchOne(
                db,
                sql: """
                    SELECT productId FROM offlineProducts WHERE requestedProductId = ? AND productId IS NOT NULL
                    ORDER BY requestedAt DESC LIMIT 1
                    """, arguments: [productId]) ?? productId
        guard
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT m.*, f.localPath AS _localPath, f.state AS _fileState, f.bytesOnDisk AS _bytesOnDisk,
                           f.sizeBytes AS _sizeBytes, f.sha256 AS _sha256, f.mimeType AS _mimeType
                    FROM mediaItems m JOIN files f ON f.id = m.fileId WHERE m.id = ?
                    """, arguments: [actual])
        else { return nil }
        return LocalFile(
            actualProductId: actual, relativePath: row["_localPath"], fileState: row["_fileState"],
            bytesOnDisk: row["_bytesOnDisk"], sizeBytes: row["_sizeBytes"], sha256: row["_sha256"],
            mimeType: row["_mimeType"], item: MediaItemInfo(row: row))
    }
}

/// A `mediaItems` row: what the player shows and what loudness normalization needs.
public struct MediaItemInfo: Sendable, Equatable {
    public var id: String
    public var productType: String
    public var title: String?
    public var artist: String?
    public var album: String?
    public var durationSeconds: Double?
    public var audioQuality: String?
    public var codec: String?
    public var sampleRate: Int?
    public var bitDepth: Int?
    public var trackGain: Double?
    public var trackPeak: Double?
    public var albumGain: Double?
    public var albumPeak: Double?
    public var manifestType: String

    public init(row: Row) {
        id = row["id"]
        productType = row["productType"]
        title = row["title"]
        artist = row["artist"]
        album = row["album"]
        durationSeconds = row["durationSeconds"]
        audioQuality = row["audioQuality"]
        codec = row["codec"]
        sampleRate = row["sampleRate"]
        bitDepth = row["bitDepth"]
        trackGain = row["trackGain"]
        trackPeak = row["trackPeak"]
        albumGain = row["albumGain"]
        albumPeak = row["albumPeak"]
        manifestType = row["manifestType"]
    }
}
