import Foundation
import StateDB

#if canImport(Glibc)
    import Glibc
#endif

/// The player's HTTP cache of streamed media on disk (`<state-dir>/cache/http`), after the TIDAL
/// seed's "HTTP Caching": keyed by the URL's path only (the query holds per-request signatures),
/// honouring `Cache-Control` (`no-store` never stored, `max-age` freshness, `no-cache` and expired
/// entries revalidated with their `ETag`), bounded to `maxBytes` by evicting the least recently used.
///
/// Only complete, checked bodies enter it: a stream writes to a temporary file in the same folder
/// and `commit` renames it in once every byte of the declared size is there. A reader that holds
/// an entry's file open keeps reading it even if it is evicted meanwhile (unlink keeps the inode).
///
/// Each entry is `<key>.body` plus `<key>.json` (its metadata); the metadata file's mtime is the
/// last use, for LRU. Thread-safe: one lock around the folder's bookkeeping.
final class HTTPCache: @unchecked Sendable {
    struct Entry: Codable, Sendable, Equatable {
        var path: String
        var size: Int64
        var etag: String?
        /// Seconds since 1970 when the body (or its last revalidation) was received.
        var storedAt: Double
        var maxAge: Int?
        var noCache: Bool

        func isFresh(at now: Date) -> Bool {
            guard !noCache, let maxAge else { return false }
            return now.timeIntervalSince1970 < storedAt + Double(maxAge)
        }
    }

    enum Lookup: Sendable, Equatable {
        /// Usable as is: no request needed.
        case fresh(Entry, file: String)
        /// Needs a revalidation (it has an ETag) before use.
        case stale(Entry, file: String)
    }

    let directory: String
    let maxBytes: Int64
    private let lock = NSLock()

    /// Creates the folder and removes temporary files a previous run left behind.
    init(directory: String, maxBytes: Int64) throws {
        self.directory = directory
        self.maxBytes = max(0, maxBytes)
        try PrivateDirectory.create(directory)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] where name.hasSuffix(".part") {
            unlink(directory + "/" + name)
        }
    }

    /// The key for a URL path: FNV-1a 64 of the path in hex (the path itself is in the metadata
    /// and compared on lookup, so a collision is a miss, never a wrong body).
    static func key(for path: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in path.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The path part of an absolute or origin-relative URL: what the cache keys on.
    static func path(of url: String) -> String {
        var rest = Substring(url)
        if let scheme = rest.range(of: "://") {
            rest = rest[scheme.upperBound...]
            rest = rest.firstIndex(of: "/").map { rest[$0...] } ?? "/"
        }
        if let cut = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { rest = rest[..<cut] }
        return rest.isEmpty ? "/" : String(rest)
    }

    func lookup(path: String, now: Date = Date()) -> Lookup? {
        lock.withLock {
            let key = Self.key(for: path)
            guard let entry = readEntry(key), entry.path == path else { return nil }
            let body = bodyPath(key)
            var info = stat()
            guard stat(body, &info) == 0, Int64(info.st_size) == entry.size else {
                removeLocked(key)
                return nil
            }
            utimes(metaPath(key), nil)
            if entry.isFresh(at: now) { return .fresh(entry, file: body) }
            guard entry.etag != nil else {
                // Stale and nothing to revalidate with: fetch it again.
                removeLocked(key)
                return nil
            }
            return .stale(entry, file: body)
        }
    }

    /// A new temporary file in the cache folder (same filesystem, so `commit` is a rename).
    func temporaryFile(for path: String) -> String {
        "\(directory)/\(Self.key(for: path))-\(UUID().uuidString.prefix(8)).part"
    }

    /// Moves a complete body into the cache. Returns false (and removes `temporary`) when the
    /// response may not be stored or cannot fit.
    @discardableResult
    func commit(
        temporary: String, path: String, size: Int64, etag: String?, cacheControl: CacheControl,
        now: Date = Date()
    ) -> Bool {
        guard !cacheControl.noStore, size <= maxBytes else {
            unlink(temporary)
            return false
        }
        return lock.withLock {
            let key = Self.key(for: path)
            removeLocked(key)
            evictLocked(toFit: size)
            let entry = Entry(
                path: path, size: size, etag: etag, storedAt: now.timeIntervalSince1970,
                maxAge: cacheControl.maxAge, noCache: cacheControl.noCache)
            guard rename(temporary, bodyPath(key)) == 0, writeEntry(entry, key) else {
                unlink(temporary)
                removeLocked(key)
                return false
            }
            return true
        }
    }

    /// A 304 answered a revalidation: the entry is fresh again under the new headers.
    func revalidated(path: String, cacheControl: CacheControl, etag: String?, now: Date = Date()) {
        lock.withLock {
            let key = Self.key(for: path)
            guard var entry = readEntry(key), entry.path == path else { return }
            entry.storedAt = now.timeIntervalSince1970
            entry.maxAge = cacheControl.maxAge ?? entry.maxAge
            entry.noCache = cacheControl.noCache
            entry.etag = etag ?? entry.etag
            if cacheControl.noStore || !writeEntry(entry, key) { removeLocked(key) }
        }
    }

    func remove(path: String) {
        lock.withLock { removeLocked(Self.key(for: path)) }
    }

    /// Bytes of bodies in the cache.
    var totalBytes: Int64 {
        lock.withLock { entriesLocked().reduce(0) { $0 + $1.size } }
    }

    // MARK: Internals (lock held)

    private func bodyPath(_ key: String) -> String { "\(directory)/\(key).body" }
    private func metaPath(_ key: String) -> String { "\(directory)/\(key).json" }

    private func readEntry(_ key: String) -> Entry? {
        guard let data = FileManager.default.contents(atPath: metaPath(key)) else { return nil }
        return try? JSONDecoder().decode(Entry.self, from: data)
    }

    private func writeEntry(_ entry: Entry, _ key: String) -> Bool {
        guard let data = try? JSONEncoder().encode(entry) else { return false }
        return FileManager.default.createFile(atPath: metaPath(key), contents: data)
    }

    private func removeLocked(_ key: String) {
        unlink(metaPath(key))
        unlink(bodyPath(key))
    }

    private func entriesLocked() -> [(key: String, size: Int64, lastUse: Double)] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.compactMap { name in
            guard name.hasSuffix(".json") else { return nil }
            let key = String(name.dropLast(5))
            var body = stat(), meta = stat()
            guard stat(bodyPath(key), &body) == 0, stat(metaPath(key), &meta) == 0 else { return nil }
            let lastUse = Double(meta.st_mtim.tv_sec) + Double(meta.st_mtim.tv_nsec) / 1e9
            return (key, Int64(body.st_size), lastUse)
        }
    }

    private func evictLocked(toFit incoming: Int64) {
        var entries = entriesLocked().sorted { $0.lastUse < $1.lastUse }
        var total = entries.reduce(0) { $0 + $1.size }
        while total + incoming > maxBytes, !entries.isEmpty {
            let oldest = entries.removeFirst()
            removeLocked(oldest.key)
            total -= oldest.size
        }
    }
}
