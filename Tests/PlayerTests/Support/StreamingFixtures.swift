import Foundation
import GRDB
import HTTPClient
import MediaDecoder
import OriginClient
import TestSupport
import XCTest

@testable import StateDB
@testable import player

/// The streaming tests' origin, for the exit handler (set once, before any test uses it).
nonisolated(unsafe) private var originToStop: OriginProcess?

/// What the streaming tests share: one reference origin for the whole run (reset before each
/// test), catalog rows written as the downloader would (docs/catalog.md), and helpers to drain
/// a source through the decoder.
enum StreamingFixtures {
    private static let sharedOrigin = Result { () throws -> OriginProcess in
        let origin = try OriginProcess.start()
        // One origin for the run: stopped when the test process exits, not left behind.
        originToStop = origin
        atexit { originToStop?.discard() }
        return origin
    }

    /// The run's origin with its counters and faults cleared.
    static func origin() async throws -> OriginAPI {
        let api = OriginAPI(origin: try sharedOrigin.get())
        let reset = try await api.post("/_control/reset", [String: Any](), authorized: false)
        guard reset.status == 200 else { throw OriginTestError("reset answered \(reset.status)") }
        return api
    }

    static func client(_ api: OriginAPI) throws -> OriginClient {
        try OriginClient(baseURL: api.origin.baseURL, credentials: BasicCredentials(token: "demo", secret: "demo"))
    }

    /// Non-control requests the origin saw since the last reset, by path.
    static func requests(_ api: OriginAPI) async throws -> [String: Int] {
        let stats = try await api.stats()
        return (stats["requests"] as? [String: Any] ?? [:]).compactMapValues { ($0 as? NSNumber)?.intValue }
    }

    /// The bytes the origin serves at `/media/<name>`.
    static func originMedia(_ api: OriginAPI, _ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: api.origin.dataDirectory.appendingPathComponent("media/\(name)")))
    }

    /// Decodes everything a source gives; the decoded bytes. On a thread of its own, as the
    /// player's decode thread does: a source may block (a file still downloading) and reads the
    /// catalog with the blocking API meant for such threads.
    static func decodeAll(_ source: any ByteSource) async throws -> [UInt8] {
        try await onOwnThread {
            let decoder = try AudioDecoder(source: source)
            var bytes: [UInt8] = []
            while let chunk = try decoder.nextChunk() { bytes += chunk.samples }
            return bytes
        }
    }

    static func decodeAll(path: String) throws -> [UInt8] {
        let decoder = try AudioDecoder(path: path)
        var bytes: [UInt8] = []
        while let chunk = try decoder.nextChunk() { bytes += chunk.samples }
        return bytes
    }

    /// Reads a source to its end, raw, on a thread of its own (as `decodeAll`).
    static func readAll(_ source: any ByteSource) async throws -> [UInt8] {
        try await onOwnThread {
            var bytes: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 32 * 1024)
            while true {
                let count = try buffer.withUnsafeMutableBytes { try source.read(into: $0) }
                if count == 0 { return bytes }
                bytes += buffer[..<count]
            }
        }
    }

    /// Runs `body` on a new thread, as the player runs its decoder.
    static func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }
}

/// Collects a source's events from any thread.
final class SourceEventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [ByteSourceEvent] = []

    var sink: @Sendable (ByteSourceEvent) -> Void { { [self] event in lock.withLock { events.append(event) } } }
    var all: [ByteSourceEvent] { lock.withLock { events } }
}

/// A state directory with a catalog and a media folder, and the rows the downloader would write.
final class CatalogFixture: @unchecked Sendable {
    let directory: TestDirectory
    let catalog: StateDB
    var mediaDirectory: String { directory.stateDir + "/media" }

    init() throws {
        directory = try TestDirectory(prefix: "cps")
        catalog = try StateDB(stateDirectory: directory.stateDir)
        try FileManager.default.createDirectory(atPath: mediaDirectory + "/tracks", withIntermediateDirectories: true)
    }

    deinit { directory.remove() }

    /// A `files` + `mediaItems` row for `productId`, its bytes at `tracks/<productId>.<ext>`
    /// (`.part` unless verified). Returns the relative path.
    @discardableResult
    func addFile(
        productId: String, bytes: [UInt8], ext: String = "flac", state: String = "verified",
        declaredSize: Int? = nil, codec: String? = "flac", audioQuality: String? = "LOSSLESS"
    ) throws -> String {
        let relative = "tracks/\(productId).\(ext)"
        let onDisk = state == "verified" ? relative : relative + ".part"
        if state != "pending" {
            try Data(bytes).write(to: URL(fileURLWithPath: mediaDirectory + "/" + onDisk))
        }
        try catalog.pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO files (urlPath, localPath, mimeType, sizeBytes, bytesOnDisk, state, createdAt, completedAt)
                    VALUES (?, ?, 'audio/flac', ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    "/media/\(productId).\(ext)", relative, declaredSize ?? bytes.count,
                    state == "pending" ? 0 : bytes.count, state, Date(), state == "verified" ? Date() : nil,
                ])
            let fileId = db.lastInsertedRowID
            try db.execute(
                sql: """
                    INSERT INTO mediaItems (id, title, durationSeconds, audioQuality, codec, sampleRate, bitDepth,
                                            trackGain, trackPeak, fileId)
                    VALUES (?, ?, 2.0, ?, ?, 44100, 16, -6.5, 0.9, ?)
                    """, arguments: [productId, "Title of \(productId)", audioQuality, codec, fileId])
        }
        return relative
    }

    /// An `offlineProducts` row (one `offline.add` token).
    /// `license`: nil for none, `.some(nil)` for a purchase, `.some(date)` for a rental ending then.
    func addOfflineProduct(
        requested: String, actual: String, state: String = "cached",
        validUntil: Date? = Date().addingTimeInterval(86_400), error: String? = nil,
        license: Date?? = nil
    ) throws {
        try catalog.pool.write { db in
            let token = UUID().uuidString
            var licenseId: String?
            if let license {
                licenseId = "lic-" + token
                try db.execute(
                    sql: """
                        INSERT INTO licenses (id, productId, kind, requestedAt, expiresAt, token) VALUES (?, ?, ?, ?, ?, ?)
                        """, arguments: [licenseId, requested, license == nil ? "purchase" : "rental", Date(), license, token])
            }
            try db.execute(
                sql: """
                    INSERT INTO offlineProducts (token, requestedProductId, productId, state, offlineValidUntil, error, requestedAt, licenseId)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [token, requested, actual, state, validUntil, error, Date(), licenseId])
        }
    }

    func setFile(_ relative: String, state: String, bytesOnDisk: Int? = nil, error: String? = nil) throws {
        try catalog.pool.write { db in
            try db.execute(
                sql: "UPDATE files SET state = ?, bytesOnDisk = COALESCE(?, bytesOnDisk) WHERE localPath = ?",
                arguments: [state, bytesOnDisk, relative])
            if let error {
                try db.execute(sql: "UPDATE offlineProducts SET state = 'failed', error = ?", arguments: [error])
            }
        }
    }

    func resolver(origin: OriginClient?, cache: HTTPCache? = nil) -> SourceResolver {
        SourceResolver(catalog: catalog, mediaDirectory: mediaDirectory, origin: origin, cache: cache)
    }

    func cache(maxBytes: Int64 = 64 << 20) throws -> HTTPCache {
        try HTTPCache(directory: directory.stateDir + "/cache/http", maxBytes: maxBytes)
    }
}

/// Byte-for-byte equality that reports sizes and the first difference instead of both arrays.
func assertSameBytes(
    _ actual: @autoclosure () async throws -> [UInt8], _ expected: @autoclosure () async throws -> [UInt8],
    _ message: String = "", file: StaticString = #filePath, line: UInt = #line
) async {
    do {
        let a = try await actual(), b = try await expected()
        guard a != b else { return }
        let first = (0..<min(a.count, b.count)).first { a[$0] != b[$0] } ?? min(a.count, b.count)
        XCTFail("bytes differ: \(a.count) vs \(b.count), first difference at \(first). \(message)", file: file, line: line)
    } catch {
        XCTFail("threw \(error). \(message)", file: file, line: line)
    }
}
