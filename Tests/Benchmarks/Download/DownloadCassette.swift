import Foundation
import Wire

#if canImport(Glibc)
    import Glibc
#endif

/// Cassette's side of the download benchmark: the real release `downloader`, started on an
/// empty state folder against the loopback origin, asked through its socket to sync a
/// station; timed from sending `stations.sync` to the `StationDownloadComplete` event, i.e.
/// until every file is downloaded, hashed, size- and SHA-256-checked, fsynced, renamed, its
/// directory fsynced and the catalog says verified.
struct DownloadCassette {
    let binary: String
    let originURL: String
    let maxParallel: Int
    let timeoutSeconds: Double
    /// The cores the downloader runs on.
    var pin: CPUPin = .none

    struct Outcome {
        var seconds: Double
        /// Of `seconds`, until `stations.sync` answered (manifest fetched and applied to the catalog).
        var answerSeconds: Double
        /// CPU time (user + system) the downloader used from sending the request to completion.
        var cpuSeconds: Double
        var files: Int
        var mediaFolder: String
    }

    /// One round: start a fresh downloader in `folder`, sync `stationId`, stop the downloader.
    /// The state folder stays for the caller to check and remove.
    func syncStation(_ stationId: String, expectedFiles: Int, folder: String) async throws -> Outcome {
        let runtime = folder + "/run", state = folder + "/state", config = folder + "/cassette.json"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        try #"{"logLevel":"warning","clientToken":"demo","clientSecret":"demo","downloader":{"maxParallel":\#(maxParallel)}}"#
            .write(toFile: config, atomically: true, encoding: .utf8)
        let command = pin.command(binary, ["--runtime-dir", runtime, "--state-dir", state, "--origin", originURL, "--config", config])
        let child = try ChildProcesses.shared.launch(command.executable, command.arguments, logFile: folder + "/downloader.log")
        defer { ChildProcesses.shared.stop(child) }
        let client = try await connectWhenListening(runtime + "/downloader.sock", child: child, name: "downloader", seconds: 30)
        defer { Task { await client.close() } }
        try await waitCatalogReady(client)
        _ = try await client.call("events.subscribe", ["topics": ["downloads"]])

        let cpuBefore = ProcessCPU.seconds(pid: child.pid)
        let begin = monotonicNanos()
        let answer = try await client.call("stations.sync", ["stationId": .string(stationId)])
        let answered = monotonicNanos()
        guard answer["total"]?.intValue == expectedFiles, (answer["refused"]?.arrayValue ?? []).isEmpty else {
            throw BenchError("stations.sync answered \(answer), expected \(expectedFiles) items and no refusals")
        }
        let done = try await waitComplete(client, stationId: stationId, since: begin)
        let seconds = Double(done - begin) / 1e9
        let cpu = ProcessCPU.seconds(pid: child.pid) - cpuBefore
        guard let completed = try? await client.call("stations.list"),
            let entry = completed["localOffline"]?.arrayValue?.first(where: { $0["id"]?.stringValue == stationId }),
            entry["verifiedCount"]?.intValue == expectedFiles
        else {
            throw BenchError("after StationDownloadComplete the catalog does not show \(expectedFiles) verified items of \(stationId)")
        }
        return Outcome(
            seconds: seconds, answerSeconds: Double(answered - begin) / 1e9, cpuSeconds: cpu, files: expectedFiles, mediaFolder: state + "/media/tracks")
    }

    private func waitCatalogReady(_ client: RPCClient) async throws {
        let until = deadline(after: 30)
        while try await client.call("service.status")["catalog"]?["state"]?.stringValue != "ready" {
            guard monotonicNanos() < until else { throw BenchError("the downloader's catalog was not ready within 30 s") }
            try await Task.sleep(nanoseconds: 5_000_000)
        }
    }

    /// The monotonic time at which `StationDownloadComplete` arrived for `stationId`.
    private func waitComplete(_ client: RPCClient, stationId: String, since begin: UInt64) async throws -> UInt64 {
        let timeout = timeoutSeconds
        return try await withThrowingTaskGroup(of: UInt64?.self) { group in
            group.addTask {
                for await event in client.events where event.topic == "downloads" {
                    guard event.data["stationId"]?.stringValue == stationId else { continue }
                    if event.type == "StationDownloadComplete" {
                        let now = monotonicNanos()
                        let failed = event.data["failed"]?.intValue ?? 0
                        guard failed == 0 else { throw BenchError("\(failed) files of \(stationId) failed: \(event.data)") }
                        return now
                    }
                }
                throw BenchError("the downloader closed its connection before \(stationId) completed")
            }
            group.addTask {
                try await Task.sleep(nanoseconds: UInt64(timeout * 1e9))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let done = first else {
                throw BenchError("\(stationId) did not complete within \(timeout) s")
            }
            return done
        }
    }
}
