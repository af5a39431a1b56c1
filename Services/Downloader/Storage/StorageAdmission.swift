import Foundation
import Logging

/// The disk side of admission: which of the files the network allows fit the storage budget
/// now, each one's bytes reserved before the next is weighed, and heard station tracks evicted
/// to make room for a file that would start at once. The cache limit's one home with
/// `StorageBudget` (the room) and `Eviction` (which tracks go first).
struct StorageAdmission: Sendable {
    let budget: StorageBudget
    let files: FileStore
    let store: MediaFolder
    let events: DownloaderEvents
    let logger: Logger

    /// The files among `allowed` (in order) that fit: at most `slots` to start now, evicting
    /// for them if need be, then up to `prefetch` more only while they fit as they are (one
    /// that does not ends the list without making anything wait). `running` and `ahead` (files
    /// admitted by an earlier round, waiting for a slot): what they will still write is reserved
    /// first. `protected`: files never evicted. Returns the admitted jobs (with what their
    /// `.part` holds), the refused ones with the shortage, and the room left.
    func admit(
        _ allowed: [FileJob], slots: Int, prefetch: Int, running: [FileJob], ahead: [StorageBudget.AdmittedAhead],
        protected: Set<Int64>, policy: DownloadPolicy
    ) async -> (admitted: [FileJob], refused: [(FileJob, String)], roomLeft: Int64) {
        // The `.part` sizes of the candidates the loop may reach, looked up a round's worth at a
        // time (the first with the room): most rounds stop after the first `slots + prefetch`,
        // of many more candidates.
        let first = Array(allowed.prefix(max(1, slots + prefetch)))
        var (room, _, onDisk) = await budget.room(
            policy: policy, running: running, ahead: ahead, looking: first, countCache: false)
        var looked = first.count
        var admitted: [FileJob] = []
        var refused: [(FileJob, String)] = []
        for (index, job) in allowed.enumerated() where admitted.count < slots + prefetch {
            if index >= looked {
                let next = allowed[index..<min(allowed.count, index + max(1, slots + prefetch))]
                onDisk.merge(await budget.partSizes(Array(next))) { first, _ in first }
                looked = index + next.count
            }
            let need = room.need(size: job.sizeBytes, onDisk: onDisk[job.fileId] ?? 0)
            if admitted.count >= slots {
                guard need <= room.available else { break }
                admitted.append(job.withPart(onDisk[job.fileId]))
                room.reserve(need)
                continue
            }
            if need > room.available, await evict(bytes: need - room.available, excluding: protected) {
                room = await budget.room(
                    policy: policy, running: running, ahead: ahead + admitted.map(StorageBudget.AdmittedAhead.init),
                    looking: [], countCache: false
                ).room
            }
            if need <= room.available {
                admitted.append(job.withPart(onDisk[job.fileId]))
                room.reserve(need)
            } else {
                refused.append((job, room.shortage(need: need)))
            }
        }
        return (admitted, refused, room.available)
    }

    /// Why a transfer the disk stopped (ENOSPC) waits: the disk's words, then the room the
    /// budget finds against what the file still needs beyond its `.part`.
    func stoppedReason(_ job: FileJob, _ shortage: StorageShortage, policy: DownloadPolicy) async -> String {
        let onDisk = await store.partSize(job.relative)
        let room = await budget.room(policy: policy, running: []).room
        return shortage.reason + ": " + room.shortage(need: room.need(size: job.sizeBytes, onDisk: onDisk))
    }

    /// Evicts heard station tracks until `bytes` are freed; true when it freed that much.
    @discardableResult
    func evict(bytes: Int64, excluding: Set<Int64>) async -> Bool {
        guard bytes > 0 else { return true }
        let victims = (try? await files.evict(excluding: excluding) { Eviction.choose(bytes: bytes, from: $0) }) ?? []
        await store.delete(victims.map(\.path))
        for victim in victims {
            logger.info("evicted \(victim.path) (\(victim.sizeBytes) bytes, heard) to make room")
            for station in victim.stations {
                for item in victim.items {
                    events.publish(.itemEvicted(stationId: station, itemId: item, sizeBytes: victim.sizeBytes))
                }
            }
        }
        return victims.reduce(0) { $0 + $1.sizeBytes } >= bytes
    }
}
