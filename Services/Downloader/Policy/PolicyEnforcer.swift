import Foundation
import Logging

/// Applies the policy to transfers already running, on every network change, policy change
/// and poll tick (1 s): a network that no longer allows a file stops its transfer (its bytes
/// stay in the `.part`) and leaves its owners Idle, and so does the end of the last open
/// download window (but for `now` items); a window that opens releases what waited for it
/// and sets the shared rate limit (`PolicyGate.refreshWindow`); a disk that filled up under running
/// downloads (other software wrote to it) stops enough of them to keep `minFreeBytes`; then
/// the queue is kicked, so whatever became allowed starts again by itself.
actor PolicyEnforcer {
    private let gate: PolicyGate
    private let engine: DownloadEngine
    private let logger: Logger
    private var lastVerdict: NetworkVerdict
    /// Whether a download window was open at the last look; nil before the first, so that the
    /// first look releases (or holds) what the last run left waiting for a window.
    private var lastWindowOpen: Bool?

    init(gate: PolicyGate, engine: DownloadEngine, logger: Logger) {
        self.gate = gate
        self.engine = engine
        self.logger = logger
        lastVerdict = gate.verdict
    }

    func enforce() async {
        let verdict = gate.verdict
        if verdict != lastVerdict {
            lastVerdict = verdict
            await gate.releaseNetworkIdle()
            await gate.idleBlockedQueue()
        }
        let window = gate.refreshWindow()
        if window.isOpen != lastWindowOpen {
            lastWindowOpen = window.isOpen
            if window.isOpen {
                logger.notice("a download window opened", metadata: ["closesAt": "\(Self.when(window))"])
                await gate.releaseWindowIdle()
            } else {
                logger.notice("every download window is closed", metadata: ["opensAt": "\(Self.when(window))"])
                await gate.idleOutsideWindow()
            }
        }
        var running = await engine.runningJobs
        var active = running.map(\.fileId)
        switch verdict {
        case .allowed:
            break
        case .blocked(let block, let reason):
            await stop(active, block, reason)
            active = []
        case .perItem(let block, let reason):
            let allowed = await gate.cellularAllowedFiles(active)
            let stopping = active.filter { !allowed.contains($0) }
            await stop(stopping, block, reason)
            active = active.filter { allowed.contains($0) }
        }
        if !window.isOpen, !active.isEmpty {
            let exempt = await gate.downloadNowFiles(active)
            await stop(active.filter { !exempt.contains($0) }, .outsideDownloadWindow, DownloadWindows.reason(window))
            active = active.filter { exempt.contains($0) }
        }
        running.removeAll { !active.contains($0.fileId) }
        // Checked while writing: admission reserved every running file's remaining bytes,
        // so a negative room means someone else took the space.
        if !running.isEmpty {
            var (room, reservations) = await gate.budget.room(policy: gate.policy, running: running)
            if room.availableRaw < 0 {
                var stopping: [Int64] = []
                for (id, left) in reservations.sorted(by: { $0.value.disk > $1.value.disk }) where room.availableRaw < 0 {
                    stopping.append(id)
                    room.reservedBytes -= left.disk
                    room.cacheReservedBytes -= left.cache
                }
                let reason = "the disk filled up while downloading: " + room.shortage(need: reservations.values.map(\.disk).max() ?? 0)
                await stop(stopping, .cacheLimit, reason)
            }
        }
        await engine.kick()
    }

    /// When the window state changes next, in local time ("never" without a next opening,
    /// "-" for an open schedule without windows).
    private static func when(_ window: DownloadWindows.State) -> String {
        switch window {
        case .open(_, let closesAt): return closesAt.map { LocalWallClock().timestamp($0) } ?? "-"
        case .closed(let opensAt, _): return opensAt.map { LocalWallClock().timestamp($0) } ?? "never"
        }
    }

    /// Marks the owners Idle first, then cancels: the transfer ends within a callback's time
    /// (curl checks the cancel flag on every write and progress tick).
    private func stop(_ fileIds: [Int64], _ block: PolicyBlock, _ reason: String) async {
        guard !fileIds.isEmpty else { return }
        logger.info("stopping \(fileIds.count) download(s): \(block.rawValue): \(reason)")
        await gate.markIdle(fileIds, block, reason)
        for id in fileIds {
            Task { await engine.cancelAndWait(fileId: id) }
        }
    }
}
