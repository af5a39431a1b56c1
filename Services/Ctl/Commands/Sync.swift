import ArgumentParser
import Foundation
import Wire

/// `cassettectl sync <station>`: `stations.sync`, then waits for the files with a progress bar
/// driven by the downloader's `StationDownloadProgress`/`StationDownloadComplete` events, and
/// says why it waits from `ItemStateChanged` and `network.get`.
struct Sync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Take a station offline (stations.sync) and wait until its files are on the device.",
        discussion: """
            Shows a progress bar on a terminal (files done, rate, ETA), and says why the download \
            waits: cellular not allowed, no network, cache full, origin failing. Exit status 2 when \
            some items failed for good; 75 when --wait-timeout passed (the download goes on in the \
            downloader).
            """)

    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var wait: WaitOptions

    @Argument(help: "Station id, e.g. st-9 (see `cassettectl stations`).")
    var stationId: String

    @Option(name: .customLong("minutes"), help: "Unheard minutes to hold (targetMinutes); default: the whole station.")
    var targetMinutes: Double?

    @Flag(help: "Return once the downloader accepted the sync, without waiting for the files.")
    var noWait = false

    func run() async throws {
        let connection = try await Connection.open(self.connection, .downloader, json: output.json)
        defer { Task { await connection.close() } }
        if !noWait { try await connection.subscribe(["downloads"]) }
        var params: [String: JSONValue] = ["stationId": .string(stationId)]
        if let targetMinutes { params["targetMinutes"] = .number(targetMinutes) }
        let started = Date()
        var result = try await connection.call("stations.sync", .object(params))
        var progress = (
            pending: result["pending"]?.intValue ?? 0, failed: result["failed"]?.intValue ?? 0,
            total: result["total"]?.intValue ?? 0
        )

        if !noWait && progress.pending > 0 {
            let follower = DownloadFollower(
                label: stationId, disabled: wait.noProgress, originAfter: 60,
                start: Double(progress.total - progress.pending))
            func draw() {
                let done = progress.total - progress.pending - progress.failed
                follower.note(Double(done + progress.failed))
                follower.bar.update(
                    fraction: progress.total == 0 ? 1 : Double(done) / Double(progress.total),
                    detail: ProgressText.files(
                        done: done, total: progress.total, failed: progress.failed,
                        rate: follower.meter.rate, waiting: follower.reason))
            }
            draw()
            let station = stationId
            let outcome = await EventWait.run(connection, timeout: wait.waitTimeout, tick: 1) { input in
                guard case .event(let event) = input else {
                    await follower.tick { await Self.probe(connection) }
                    draw()
                    return false
                }
                if event.type == "ItemStateChanged", event.data["stationId"]?.stringValue == station {
                    if let reason = StallReason.item(error: event.data["error"]?.stringValue, reason: event.data["reason"]?.stringValue) {
                        follower.set(reason)
                        draw()
                    }
                    return false
                }
                guard event.topic == "downloads", event.data["stationId"]?.stringValue == station,
                    event.type == "StationDownloadProgress" || event.type == "StationDownloadComplete"
                else { return false }
                progress = (
                    event.data["pending"]?.intValue ?? progress.pending, event.data["failed"]?.intValue ?? progress.failed,
                    event.data["total"]?.intValue ?? progress.total
                )
                draw()
                return event.type == "StationDownloadComplete" || progress.pending == 0
            }
            follower.bar.finish()
            if outcome != .done { throw EventWait.fail(outcome, service: .downloader, what: "the sync of \(station)", json: output.json) }
        }
        result = merge(result, progress, waited: !noWait, seconds: Date().timeIntervalSince(started))
        CtlOutput.show(result, json: output.json) { _ in summary(result) }
        if progress.failed > 0 && !noWait {
            CtlOutput.error(
                "\(progress.failed) of \(progress.total) items of \(stationId) failed; `cassettectl watch downloader downloads` while running `cassettectl sync \(stationId)` again shows why."
            )
            throw ExitCode(ExitStatus.workFailed)
        }
    }

    /// Why a station's files may not move: the network as the downloader judges it.
    static func probe(_ connection: Connection) async -> DownloadFollower.Probe {
        guard let network = try? await connection.attempt("network.get") else { return .moving }
        return StallReason.network(network).map { .waiting($0) } ?? .moving
    }

    private func merge(_ result: JSONValue, _ p: (pending: Int, failed: Int, total: Int), waited: Bool, seconds: Double) -> JSONValue {
        var object = result.objectValue ?? [:]
        object["pending"] = .number(Double(p.pending))
        object["failed"] = .number(Double(p.failed))
        object["total"] = .number(Double(p.total))
        object["complete"] = .bool(p.pending == 0)
        if waited { object["seconds"] = .number((seconds * 10).rounded() / 10) }
        return .object(object)
    }

    private func summary(_ r: JSONValue) -> String {
        let total = r["total"]?.intValue ?? 0, pending = r["pending"]?.intValue ?? 0, failed = r["failed"]?.intValue ?? 0
        let count = { (key: String) in r[key]?.arrayValue?.count ?? 0 }
        var line = "\(stationId): \(total - pending - failed)/\(total) items on the device"
        if failed > 0 { line += ", \(failed) failed" }
        if pending > 0 { line += ", \(pending) still downloading" }
        line += " (added \(count("added")), removed \(count("removed")), refused \(count("refused")))"
        if let seconds = r["seconds"]?.doubleValue { line += " in \(seconds < 60 ? String(format: "%.1f s", seconds) : HumanTime.duration(seconds))" }
        return line
    }
}
