import ServiceKit
import StateDB

/// The downloader's `STATUS=` line (see ServiceKit's `StatusLine`): "3 downloads active, 41 %"
/// (bytes on disk of the files being fetched, against their sizes), "idle", or "idle: outside
/// the download windows" while every window is closed.
enum DownloaderStatusLine {
    static func text(core: Task<DownloaderCore, Error>, context: DaemonContext) async -> String {
        guard let ready = try? await core.value else { return "not running: the catalog or media folder is unavailable" }
        let jobs = await ready.engine.runningJobs
        guard !jobs.isEmpty else { return ready.gate.window.isOpen ? "idle" : "idle: outside the download windows" }
        let written = try? await FileStore(catalog: context.catalog()).bytesOnDisk(of: jobs.map(\.fileId))
        let total = jobs.reduce(Int64(0)) { $0 + $1.sizeBytes }
        let percent = total > 0 ? min(100, (written ?? 0) * 100 / total) : 0
        return "\(jobs.count) download\(jobs.count == 1 ? "" : "s") active, \(percent) %"
    }
}
