import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A journaled ext4 made by the bench: a sparse image (`truncate`), `mkfs.ext4 -O has_journal`,
/// `mount -o loop` on a folder of the bench's temporary root. A device's data partition has a
/// journal, and each fsync then commits it; a development machine's disk may have none.
///
/// Every mounted image is recorded, so that it is unmounted and its image deleted also when
/// the bench stops on an error or a signal (`unmountAll`).
struct LoopDisk: Sendable {
    let mountPoint: String
    let image: String

    /// The images mounted and not yet unmounted.
    private final class Registry: @unchecked Sendable {
        private let lock = NSLock()
        private var disks: [LoopDisk] = []
        func withLockedValue<T>(_ body: (inout [LoopDisk]) -> T) -> T { lock.withLock { body(&disks) } }
    }
    private static let mounted = Registry()

    /// Makes and mounts an image of `bytes` in `folder`; nil, with the reason, when that is not
    /// possible here (not root, no loop device, no mkfs.ext4).
    static func make(in folder: String, bytes: Int, log: String) -> Result<LoopDisk, BenchError> {
        let disk = LoopDisk(mountPoint: folder + "/mnt", image: folder + "/ext4.img")
        do {
            guard geteuid() == 0 else { throw BenchError("mounting needs root") }
            try FileManager.default.createDirectory(atPath: disk.mountPoint, withIntermediateDirectories: true)
            _ = try DownloadPeers.timed("/usr/bin/truncate", ["-s", "\(bytes)", disk.image], log: log)
            _ = try DownloadPeers.timed("/usr/sbin/mkfs.ext4", ["-q", "-F", "-O", "has_journal", disk.image], log: log)
            mounted.withLockedValue { $0.append(disk) }
            do {
                _ = try DownloadPeers.timed("/usr/bin/mount", ["-o", "loop", disk.image, disk.mountPoint], log: log)
            } catch {
                disk.unmount()
                throw error
            }
            return .success(disk)
        } catch {
            try? FileManager.default.removeItem(atPath: disk.image)
            return .failure(error as? BenchError ?? BenchError("\(error)"))
        }
    }

    /// Unmounts (lazily if busy) and deletes the image. Safe to call twice.
    func unmount() {
        let known = Self.mounted.withLockedValue { list in
            defer { list.removeAll { $0.image == image } }
            return list.contains { $0.image == image }
        }
        guard known else { return }
        if umount2(mountPoint, 0) != 0 { _ = umount2(mountPoint, Int32(MNT_DETACH)) }
        unlink(image)
        rmdir(mountPoint)
    }

    /// Every image still mounted: unmounted and deleted (on an error or a signal).
    static func unmountAll() {
        for disk in mounted.withLockedValue({ $0 }) { disk.unmount() }
    }
}
