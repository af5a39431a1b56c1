import Glibc
import Synchronization

/// "Has anything been committed to the catalog since I last looked?", answered without a
/// catalog read, for whoever keeps what it read (the player's media server keeps products and
/// rewritten playlists between requests).
///
/// GRDB's change observation sees only this process. Every commit of any process writes the
/// catalog's files (in WAL mode it appends to `catalog.sqlite-wal`; a checkpoint writes
/// `catalog.sqlite`), and the kernel queues an inotify event on the state directory inside that
/// `write(2)`, before the commit is visible to any reader and before the writer can tell anyone
/// about it. So a change counter that first takes the queued events (a non-blocking read) is
/// never behind a commit that happened before the call. A spurious change (a checkpoint) only
/// costs a fresh read.
///
/// When the directory cannot be watched (no inotify instance left, the directory moved away),
/// every call counts as a change: nothing is kept, nothing goes stale.
public final class StateDBChanges: Sendable {
    private struct Watch {
        var fd: Int32
        var count = 0
        var broken = false
    }

    private let watch: Mutex<Watch>

    /// Watches `stateDirectory`, the directory of the catalog. Blocking (a path lookup): call it
    /// on NIO's thread pool.
    public init(stateDirectory: String) {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        let events = UInt32(IN_MODIFY | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF)
        let watched = fd >= 0 && inotify_add_watch(fd, stateDirectory, events) >= 0
        watch = Mutex(Watch(fd: fd, broken: !watched))
    }

    deinit {
        watch.withLock { if $0.fd >= 0 { close($0.fd) } }
    }

    /// A number that differs from every earlier answer whenever the catalog's files were written
    /// (a commit, by any process) since that answer. Ask before reading, keep what was read with
    /// the answer, and use it while later answers are the same. Never blocks.
    public func count() -> Int {
        watch.withLock { watch in
            if watch.broken {
                watch.count += 1
                return watch.count
            }
            if Self.drain(&watch) { watch.count += 1 }
            return watch.count
        }
    }

    /// Takes every queued event; true when one concerns the catalog (or may have: the queue
    /// overflowed, the directory went away).
    private static func drain(_ watch: inout Watch) -> Bool {
        var changed = false
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(watch.fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else {
                // EAGAIN: nothing more queued. Anything else: the watch cannot be trusted any more.
                if n == 0 || errno != EAGAIN {
                    watch.broken = true
                    changed = true
                }
                return changed
            }
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= n {
                let (mask, nameLength) = buffer.withUnsafeBytes { raw in
                    (
                        raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self),
                        Int(raw.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                    )
                }
                let nameStart = offset + MemoryLayout<inotify_event>.size
                let name = buffer[nameStart..<min(n, nameStart + nameLength)].prefix { $0 != 0 }
                if mask & UInt32(IN_Q_OVERFLOW | IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED) != 0 {
                    if mask & UInt32(IN_Q_OVERFLOW) == 0 { watch.broken = true }
                    changed = true
                } else if String(decoding: name, as: UTF8.self).hasPrefix(StateDB.fileName) {
                    changed = true
                }
                offset = nameStart + nameLength
            }
        }
    }
}
