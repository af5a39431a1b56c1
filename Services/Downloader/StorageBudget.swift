import Foundation
import GRDB
import Glibc

/// How much the downloader may still write: the media file system's free space less
/// `minFreeBytes`, and `maxCacheBytes` less what offlined content already holds, both less
/// what running downloads will still write (their reservation). Sizes are counted in the file
/// system's blocks, as the disk counts them, so a "fits" is a real fit.
struct StorageBudget: Sendable {
    let catalog: DatabasePool
    let store: MediaStore

    struct Room: Sendable, Equatable {
        var freeBytes: Int64
        var minFreeBytes: Int64
        var cacheUsedBytes: Int64
        var maxCacheBytes: Int64?
        /// Still to be written by downloads already running.
        var reservedBytes: Int64
        var blockSize: Int64

        /// May be negative: then something else filled the disk while downloads ran.
        var availableRaw: Int64 {
            var room = freeBytes - minFreeBytes - reservedBytes
            if let maxCacheBytes { room = min(room, maxCacheBytes - cacheUsedBytes - reservedBytes) }
            return room
        }
        var available: Int64 { max(0, availableRaw) }

        /// Bytes a file of `size` with `onDisk` already written will still take on disk.
        func need(size: Int64, onDisk: Int64) -> Int64 {
            let bs = max(1, blockSize)
            func blocks(_ n: Int64) -> Int64 { (n + bs - 1) / bs * bs }
            return max(0, blocks(size) - blocks(onDisk))
        }

        /// The human reason of a CacheLimit: what is missing and why.
        func shortage(need: Int64) -> String {
            var text = "needs \(Self.format(need - available)) more: \(Self.format(need)) to write, \(Self.format(available)) available "
            text += "(\(Self.format(freeBytes)) free − minFreeBytes \(Self.format(minFreeBytes))"
            if reservedBytes > 0 { text += " − \(Self.format(reservedBytes)) for running downloads" }
            text += ")"
            if let maxCacheBytes {
                text += "; maxCacheBytes \(Self.format(maxCacheBytes)) with \(Self.format(cacheUsedBytes)) used"
            }
            return text
        }

        static func format(_ bytes: Int64) -> String {
            let units = ["B", "KiB", "MiB", "GiB", "TiB"]
            var value = Double(bytes)
            var unit = 0
            while abs(value) >= 1024, unit < units.count - 1 {
                value /= 1024
                unit += 1
            }
            return unit == 0 ? "\(bytes) B" : String(format: "%.1f", value) + " \(units[unit]) (\(bytes) bytes)"
        }
    }

    /// statvfs(3) of the media directory: bytes an unprivileged writer may still use, and the block size.
    static func fileSystemSpace(_ path: String) -> (free: Int64, blockSize: Int64)? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        let frsize = Int64(info.f_frsize > 0 ? info.f_frsize : info.f_bsize)
        return (Int64(info.f_bavail) * frsize, frsize)
    }

    /// Verified files at their size, unfinished ones at what their `.part` holds.
    static func cacheUsed(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db, sql: """
            SELECT COALESCE(SUM(CASE WHEN state = 'verified' THEN COALESCE(sizeBytes, 0) ELSE bytesOnDisk END), 0) FROM files
            """) ?? 0
    }

    /// The room now, given what running downloads will still write.
    func room(policy: DownloadPolicy, reserved: Int64) -> Room {
        let space = Self.fileSystemSpace(store.root) ?? (free: 0, blockSize: 4096)
        let used = (try? catalog.read { db in try Self.cacheUsed(db) }) ?? 0
        return Room(freeBytes: space.free, minFreeBytes: policy.minFreeBytes, cacheUsedBytes: used,
                    maxCacheBytes: policy.maxCacheBytes, reservedBytes: reserved, blockSize: space.blockSize)
    }

    /// What the given files (running downloads) will still write, from their `.part` sizes.
    func remaining(fileIds: [Int64], blockSize: Int64 = 4096) -> [Int64: Int64] {
        guard !fileIds.isEmpty else { return [:] }
        let rows = (try? catalog.read { db in
            try Row.fetchAll(db, sql: "SELECT id, localPath, sizeBytes FROM files WHERE id IN (\(fileIds.map(String.init).joined(separator: ",")))")
        }) ?? []
        var result: [Int64: Int64] = [:]
        let probe = Room(freeBytes: 0, minFreeBytes: 0, cacheUsedBytes: 0, maxCacheBytes: nil, reservedBytes: 0, blockSize: blockSize)
        for row in rows {
            let relative: String = row["localPath"]
            let size: Int64 = row["sizeBytes"] ?? 0
            let onDisk = (try? store.partPath(relative)).flatMap(MediaStore.size) ?? 0
            result[row["id"]] = probe.need(size: size, onDisk: onDisk)
        }
        return result
    }

    /// A transfer failure that is the disk being full (ENOSPC, EDQUOT): then the item waits
    /// for space (CacheLimit) instead of counting a failed attempt.
    static func shortage(from error: Error) -> StorageShortage? {
        let text = "\(error)"
        guard let code = [ENOSPC, EDQUOT].first(where: { text.contains(String(cString: strerror($0))) }) else { return nil }
        return StorageShortage(reason: "the disk filled up while writing (\(String(cString: strerror(code))))")
    }
}

/// Thrown by a transfer that hit a full disk; its `.part` keeps the bytes written so far.
struct StorageShortage: Error, Sendable, CustomStringConvertible {
    var reason: String
    var description: String { "CacheLimit: \(reason)" }
}
