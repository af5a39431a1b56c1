import Foundation
import Logging
import StateDB
import Wire

/// Stations' download progress: `StationDownloadProgress` as their files end, and one
/// `StationDownloadComplete` per sync once none is pending; `ItemStateChanged failed` for a
/// station item whose file failed for good.
///
/// Progress after verified files is coalesced and rate-limited: the files verified within
/// `intervalNanos` share one count instead of each commit batch re-counting the whole station
/// (a catalog query over all its items). When the queue runs dry the count comes at once
/// (`flush`), so a station's completion is not delayed.
actor StationProgress {
    private let stations: StationStore
    private let events: DownloaderEvents
    private let logger: Logger
    private let maxAttempts: Int
    private static let intervalNanos: UInt64 = 200_000_000
    /// Stations whose progress is to be published.
    private var due: Set<String> = []
    private var scheduled = false
    /// When station progress was last counted.
    private var countedAt: UInt64 = 0
    private var flushing = false
    /// Stations whose manifest is being written in parts (`StationSync`), with how many syncs
    /// write one: their counts would be of a part, so none is published until the last part.
    private var applying: [String: Int] = [:]
    /// Stations whose StationDownloadComplete went out since their last sync: one per sync,
    /// however many paths (a file verified, one failed for good) then find nothing pending.
    private var completeAnnounced: Set<String> = []

    init(catalog: StateDB, events: DownloaderEvents, maxAttempts: Int, logger: Logger) {
        stations = StationStore(catalog: catalog)
        self.events = events
        self.maxAttempts = maxAttempts
        self.logger = logger
    }

    func beginApplying(_ station: String) { applying[station, default: 0] += 1 }

    func endApplying(_ station: String) {
        let left = (applying[station] ?? 1) - 1
        applying[station] = left > 0 ? left : nil
    }

    /// Files of these stations were verified: their progress is published within the interval.
    func filesVerified(_ stations: [String]) {
        guard !stations.isEmpty else { return }
        due.formUnion(stations)
        guard !scheduled else { return }
        scheduled = true
        let next = countedAt + Self.intervalNanos
        let now = DispatchTime.now().uptimeNanoseconds
        let wait = next > now ? next - now : 0
        Task {
            if wait > 0 { try? await Task.sleep(nanoseconds: wait) }
            self.scheduled = false
            await self.flush()
        }
    }

    /// A failed attempt of a file these stations hold: the items that failed for good with it.
    func attemptFailed(_ failure: DownloadQueueStore.FailedAttempt) async {
        for item in failure.items {
            events.publish(
                .itemStateChanged(
                    .stationItem(stationId: item.stationId, itemId: item.itemId), state: "failed",
                    error: ItemError.downloadFailed.rawValue, reason: "\(failure.error): \(failure.reason)"))
        }
        await publish(failure.stations)
    }

    /// What is due, now. One flush at a time, so counts are published in the order they were
    /// taken; a flush asked for meanwhile is done by the running one going round again.
    func flush() async {
        guard !flushing, !due.isEmpty else { return }
        flushing = true
        defer { flushing = false }
        while !due.isEmpty {
            let stations = due
            due = []
            countedAt = DispatchTime.now().uptimeNanoseconds
            await publish(stations.sorted())
        }
    }

    /// StationDownloadProgress for each station, and StationDownloadComplete when none is pending
    /// (once per sync: `afterSync` is the sync's own call, which allows the next one).
    func publish(_ stations: [String], afterSync: Bool = false) async {
        for station in stations where applying[station] == nil {
            if afterSync { completeAnnounced.remove(station) }
            guard let progress = try? await self.stations.progress(station, maxAttempts: maxAttempts) else { continue }
            let counts = DownloaderEvent.StationCounts(
                stationId: station, pending: progress.pending, failed: progress.failed,
                total: progress.total)
            events.publish(.stationDownloadProgress(counts))
            guard progress.pending == 0 else {
                completeAnnounced.remove(station)
                continue
            }
            if completeAnnounced.insert(station).inserted {
                logger.notice(
                    "station downloaded",
                    metadata: [
                        "station": "\(station)", "items": "\(progress.total)",
                        "failed": "\(progress.failed)",
                    ])
                events.publish(.stationDownloadComplete(counts))
            }
        }
    }
}
