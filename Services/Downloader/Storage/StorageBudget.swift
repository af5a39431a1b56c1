import BlockingIO
import Foundation
import Glibc

/// How much the downloader may still write: the media file system's free space less
/// `minFreeBytes`, and `maxCacheBytes` less what offlined content already holds, both less
/// what running downloads will still write (their reservation). Sizes are counted in the file
/// system's blocks, as the disk counts them, so a "fits" is a real fit.
struct StorageBudget: Sendable {
    let files: FileStore
    let store: MediaFolder

    struct Room: Sendable, Equatable {
        var freeBytes: Int64
        var minFreeBytes: Int64
        var cacheUsedBytes: Int64
        var maxCacheBytes: Int64?
        /// Still to be written by downloads already running (what the free space does not yet show).
        var reservedBytes: Int64
        var blockSize: Int64
        /// The whole size of downloads already running, which `cacheUsedBytes` leaves out: a
        /// `.part` grows faster than the catalog learns of it, so counting running files at
        /// their full size is the only reservation that holds under parallel downloads.
        var cacheReservedBytes: Int64 = 0

        /// May be negative: then something else filled the disk while downloads ran.
        var availableRaw: Int64 {
            var room = freeBytes - minFreeBytes - reservedBytes
            if let maxCacheBytes { room = min(room, maxCacheBytes - cacheUsedBytes - cacheReservedBytes) }
            return room
        }
        var available: Int64 { max(0, availableRaw) }

        /// A file admitted now: its bytes are taken from both the disk and the cache.
        mutating func reserve(_ need: Int64) {
            reservedBytes += need
            cacheReservedBytes += need
        }

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
                text += "; maxCacheBytes \(Self.format(maxCacheBytes)) with \(Self.format(cacheUsedBytes + cacheReservedBytes)) used or being downloaded"
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

    /// What one running download still takes: `disk` bytes to write, `cache` bytes in all.
    struct Reservation: Sendable {
        var disk: Int64
        var cache: Int64
    }

    /// A file admitted ahead of the free slots, waiting for one (the engine's `ready`): it does
    /// not run, so its `.part` holds what admission found in it (`FileJob.partBytes`) until it
    /// starts, and the room counts that instead of looking at the `.part` again each round.
    struct AdmittedAhead: Sendable {
        var fileId: Int64
        var sizeBytes: Int64
        var partBytes: Int64

        /// A job admission looked at; one it did not is counted at its whole size.
        init(_ job: FileJob) {
            (fileId, sizeBytes, partBytes) = (job.fileId, job.sizeBytes, job.partBytes ?? 0)
        }
    }

    /// The room now, with `running` downloads reserved: one `statvfs`, one look at their
    /// `.part`s and one catalog sum, off the cooperative pool. Computed once per admission
    /// round, then updated with `Room.reserve` as files are admitted.
    func room(policy: DownloadPolicy, running: [FileJob]) async -> (room: Room, reservations: [Int64: Reservation]) {
        let (room, reservations, _) = await room(policy: policy, running: running, looking: [])
        return (room, reservations)
    }

    /// `room(policy:running:)` with the files admitted `ahead` reserved too (from what their
    /// `.part`s held when admitted), and in the same trip off the cooperative pool what the
    /// `.part`s of `looking` hold (as `partSizes` gives it): an admission round makes one hop, not
    /// two, and looks only at the `.part`s that may have changed since the last round (those of
    /// running files, which grow) or that it has not seen.
    ///
    /// Without a `maxCacheBytes` the cache's use limits nothing, and admission (`countCache`
    /// false) skips summing it over every file of the catalog (`cacheUsedBytes` is then 0).
    func room(
        policy: DownloadPolicy, running: [FileJob], ahead: [AdmittedAhead] = [], looking: [FileJob],
        countCache: Bool = true
    ) async -> (room: Room, reservations: [Int64: Reservation], parts: [Int64: Int64]) {
        let (root, store) = (store.root, store)
        let (space, parts, looked) = await BlockingIO.run { () -> ((free: Int64, blockSize: Int64)?, [Int64], [Int64: Int64]) in
            (
                Self.fileSystemSpace(root), running.map { (try? store.partPath($0.relative)).flatMap(MediaFolder.size) ?? 0 },
                Self.partSizes(looking, store)
            )
        }
        let ids = running.map(\.fileId) + ahead.map(\.fileId)
        let used = countCache || policy.maxCacheBytes != nil ? ((try? await files.cacheUsed(excluding: ids)) ?? 0) : 0
        let (free, blockSize) = space ?? (free: 0, blockSize: 4096)
        var room = Room(
            freeBytes: free, minFreeBytes: policy.minFreeBytes, cacheUsedBytes: used,
            maxCacheBytes: policy.maxCacheBytes, reservedBytes: 0, blockSize: blockSize)
        var reservations: [Int64: Reservation] = [:]
        func reserve(_ fileId: Int64, size: Int64, onDisk: Int64) {
            let reservation = Reservation(disk: room.need(size: size, onDisk: onDisk), cache: room.need(size: size, onDisk: 0))
            room.reservedBytes += reservation.disk
            room.cacheReservedBytes += reservation.cache
            reservations[fileId] = reservation
        }
        for (job, onDisk) in zip(running, parts) { reserve(job.fileId, size: job.sizeBytes, onDisk: onDisk) }
        for file in ahead { reserve(file.fileId, size: file.sizeBytes, onDisk: file.partBytes) }
        return (room, reservations, looked)
    }

    /// What the `.part`s of these files hold, by file id, in one trip off the cooperative pool.
    func partSizes(_ jobs: [FileJob]) async -> [Int64: Int64] {
        let store = store
        return await BlockingIO.run { Self.partSizes(jobs, store) }
    }

    private static func partSizes(_ jobs: [FileJob], _ store: MediaFolder) -> [Int64: Int64] {
        Dictionary(
            jobs.map { ($0.fileId, (try? store.partPath($0.relative)).flatMap(MediaFolder.size) ?? 0) },
            uniquingKeysWith: { first, _ in first })
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
