import Foundation
import Synchronization

/// The download engine's one progress ticker: every running transfer's bytes go to the
/// engine's listener (a product's `OfflineProgress`) every half second, and into the catalog
/// (`files.bytesOnDisk`, docs/catalog.md) at its first report and then every
/// `catalogIntervalNanos`. Each catalog write is a commit (a WAL frame and an fsync): twice a
/// second for three transfers would be most of what the catalog writes to flash during a slow
/// sync, for a figure the end of the transfer writes exactly anyway (verified, or interrupted
/// with what its `.part` holds).
///
/// One task follows every transfer rather than one sleeping task per transfer: a station of
/// many small files would otherwise create, arm and cancel a timer for each file, although
/// hardly any of them runs long enough to tick. A transfer is first reported half a second
/// after it started, then every half second while its bytes change. The ticker's task runs
/// beside the engine's actor while it follows transfers and ends once it follows none; a transfer whose origin failed before is told to the listener once its
/// bytes move again (`flowingAgain`).
final class ProgressTicker: Sendable {
    /// One running transfer, as the ticker sees it. The transfer thread notes its bytes here.
    final class Follow: Sendable {
        let job: FileJob
        /// Started as a probe of an origin that failed before: its owners are told once bytes move.
        let probing: Bool
        let owners: [ProductRef]
        let startedAt: UInt64
        private let progress = Mutex(Transferred())

        init(job: FileJob, probing: Bool, owners: [ProductRef]) {
            self.job = job
            self.probing = probing
            self.owners = owners
            startedAt = DispatchTime.now().uptimeNanoseconds
        }

        /// The file's length now (the first call gives the length the transfer started from).
        func note(_ bytes: Int64) { progress.withLock { $0.note(bytes) } }

        var seen: Transferred { progress.withLock { $0 } }
    }

    /// What a transfer reported: the bytes on disk, first as found at its start.
    struct Transferred: Sendable {
        var first: Int64?
        /// When `first` was noted (uptime nanoseconds): the request went out then.
        var firstAt: UInt64 = 0
        var bytes: Int64 = -1
        /// Bytes arrived since the transfer started.
        var moved: Bool { first.map { bytes > $0 } ?? false }

        mutating func note(_ size: Int64) {
            if first == nil {
                first = size
                firstAt = DispatchTime.now().uptimeNanoseconds
            }
            bytes = size
        }
    }

    /// The ticker's own view of one transfer between ticks.
    private struct Reported {
        /// The transfer this is about: a later attempt of the same file starts afresh.
        let follow: Follow
        var owners: [ProductRef]
        var started: Bool
        var written: Int64 = -2
        var dueAt: UInt64
        /// When the catalog is next written (0: at the first report).
        var catalogDueAt: UInt64 = 0
    }

    private let queue: DownloadQueueStore
    private let listener: any TransferListener
    /// The transfers followed, by file, and whether the ticker's task runs.
    private let following = Mutex<(transfers: [Int64: Follow], running: Bool)>(([:], false))
    static let intervalNanos: UInt64 = 500_000_000
    /// How often a running transfer's bytes are written to the catalog after the first time.
    static let catalogIntervalNanos: UInt64 = 5_000_000_000
    /// How often the ticker looks; each transfer is reported at most every `intervalNanos`.
    static let lookNanos: UInt64 = 250_000_000

    init(queue: DownloadQueueStore, listener: any TransferListener) {
        self.queue = queue
        self.listener = listener
    }

    /// Follows a transfer until `remove`; starts the ticker's task when it does not run.
    func add(_ follow: Follow) {
        let start = following.withLock { state -> Bool in
            state.transfers[follow.job.fileId] = follow
            defer { state.running = true }
            return !state.running
        }
        if start { Task { await self.run() } }
    }

    func remove(_ fileId: Int64) { following.withLock { _ = $0.transfers.removeValue(forKey: fileId) } }
    /// The transfers followed now, by file (what `SlotWatch` samples).
    var current: [Int64: Follow] { following.withLock { $0.transfers } }

    /// Ends the task when nothing is followed; decided under the lock `add` takes, so a
    /// transfer added meanwhile either keeps this task or starts the next.
    private func stopIfIdle() -> Bool {
        following.withLock { state in
            guard state.transfers.isEmpty else { return false }
            state.running = false
            return true
        }
    }

    /// Reports until nothing is followed any more.
    private func run() async {
        var reported: [Int64: Reported] = [:]
        while true {
            try? await Task.sleep(nanoseconds: Self.lookNanos)
            let current = self.current
            if current.isEmpty, stopIfIdle() { return }
            reported = reported.filter { current[$0.key] === $0.value.follow }
            let now = DispatchTime.now().uptimeNanoseconds
            for (fileId, follow) in current.sorted(by: { $0.key < $1.key }) {
                var state =
                    reported[fileId]
                    ?? Reported(
                        follow: follow, owners: follow.owners, started: !follow.probing,
                        dueAt: follow.startedAt + Self.intervalNanos)
                defer { reported[fileId] = state }
                guard now >= state.dueAt else { continue }
                state.dueAt = now + Self.intervalNanos
                let seen = follow.seen
                if !state.started {
                    guard seen.moved else { continue }
                    state.started = true
                    state.owners = await listener.flowingAgain(follow.job)
                }
                let bytes = seen.bytes
                guard bytes != state.written, bytes >= 0 else { continue }
                state.written = bytes
                if now >= state.catalogDueAt {
                    state.catalogDueAt = now + Self.catalogIntervalNanos
                    _ = try? await queue.recordProgress(fileId: fileId, bytesOnDisk: bytes)
                }
                await listener.progressed(follow.job, bytes: bytes, owners: state.owners)
            }
        }
    }
}
