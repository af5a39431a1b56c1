import Foundation
import Logging

/// Applies the policy to transfers already running, on every network change, policy change
/// and poll tick (1 s): a network that no longer allows a file stops its transfer (its bytes
/// stay in the `.part`) and leaves its owners Idle; a disk that filled up under running
/// downloads (other software wrote to it) stops enough of them to keep `minFreeBytes`; then
/// the queue is kicked, so whatever became allowed starts again by itself.
actor PolicyEnforcer {
    private let gate: PolicyGate
    private let engine: DownloadEngine
    private let logger: Logger
    private var lastVerdict: NetworkVerdict

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
            gate.releaseNetworkIdle()
            gate.idleBlockedQueue()
        }
        var active = await engine.activeFileIds
        switch verdict {
        case .allowed:
            break
        case .blocked(let block, let reason):
            stop(active, block, reason)
            active = []
        case .perItem(let block, let reason):
            let allowed = gate.cellularAllowedFiles(active)
            let stopping = active.filter { !allowed.contains($0) }
            stop(stopping, block, reason)
            active = active.filter { allowed.contains($0) }
        }
        // Checked while writing: admission reserved every running file's remaining bytes,
        // so a negative room means someone else took the space.
        if !active.isEmpty {
            let remaining = gate.budget.remaining(fileIds: active)
            var room = gate.budget.room(policy: gate.policy, reserved: remaining.values.reduce(0, +))
            if room.availableRaw < 0 {
                var stopping: [Int64] = []
                for (id, left) in remaining.sorted(by: { $0.value > $1.value }) where room.availableRaw < 0 {
                    stopping.append(id)
                    room.reservedBytes -= left
                }
                let reason = "the disk filled up while downloading: " + room.shortage(need: remaining.values.max() ?? 0)
                stop(stopping, .cacheLimit, reason)
            }
        }
        await engine.kick()
    }

    /// Marks the owners Idle first, then cancels: the transfer ends within a callback's time
    /// (curl checks the cancel flag on every write and progress tick).
    private func stop(_ fileIds: [Int64], _ block: PolicyBlock, _ reason: String) {
        guard !fileIds.isEmpty else { return }
        logger.info("stopping \(fileIds.count) download(s): \(block.rawValue): \(reason)")
        gate.markIdle(fileIds, block, reason)
        for id in fileIds {
            Task { await engine.cancelAndWait(fileId: id) }
        }
    }

    /// Enforces on every tick until cancelled.
    func run(every seconds: Double) async {
        while !Task.isCancelled {
            await enforce()
            try? await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
        }
    }
}
