import ArgumentParser
import Foundation
import Wire

#if canImport(Glibc)
    import Glibc
#endif

/// `cassette-bench hls`: offlining an HLS presentation and serving it back.
///
/// 1. **Offline**: the real `downloader` offlines `vid-1` (a presentation of `--video-seconds`
///    in 2 s segments, AES-128 encrypted) from the reference origin — default variant, from
///    `offline.add` to `OfflineDone`, every file size-checked, fsynced and committed — beside
///    `ffmpeg -i master.m3u8 -c copy` of the same variant and `curl --parallel` of that
///    variant's segment list, alone and then `sync -f` (the goal's peer: the segments durable,
///    unchecked); ffmpeg also decrypts and remuxes, and does not fsync.
/// 2. **Serve**: the player's local media server against nginx serving the very same bytes
///    (the server's rewritten playlists, the segments and the key, copied to nginx's root under
///    the same paths): time to the first byte of the master playlist (`curl`'s
///    `time_starttransfer`, one new connection per request, the servers taking turns) and to
///    the first decoded video frame (`ffmpeg … -frames:v 1`). Beside them the floor: a bare
///    SwiftNIO HTTP server answering the same master playlist from memory (`http-floor`).
struct HLSBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hls",
        abstract: "Offlines an HLS presentation against ffmpeg -c copy and curl --parallel; serves it against nginx.")

    @Option(help: "Folder holding the Cassette binaries (downloader, player, cassette-origin).")
    var binDir: String = ".build/release"

    @Option(help: "Length of the presentation in seconds (2 s segments: 400 gives 200 per playlist).")
    var videoSeconds: Double = 400

    @Option(help: "Rounds of the offline run (each peer once per round).")
    var rounds: Int = 3

    @Option(help: "ffmpeg decodes to the first frame in the serving run, per server.")
    var serveRounds: Int = 20

    @Option(help: "Master playlist requests for the time to first byte, per server.")
    var ttfbRequests: Int = 300

    @Option(help: "Parallel transfers: Cassette's downloader.maxParallel, curl's --parallel-max.")
    var parallel: Int = 8

    @Option(help: "The nginx binary of the serving run (skipped when missing).")
    var nginx: String = "/usr/sbin/nginx"

    @Option(help: "Seconds one offline may take.")
    var timeout: Double = 900

    @Flag(help: "Keep the temporary folder.")
    var keepTemp = false

    func validate() throws {
        guard (4...3_600).contains(videoSeconds), rounds > 0, serveRounds > 0, ttfbRequests > 0, (1...32).contains(parallel) else {
            throw ValidationError("--video-seconds 4…3600; rounds, --serve-rounds and --ttfb-requests positive; --parallel 1…32")
        }
    }

    func run() async throws {
        try await inTempRoot(prefix: "cbh", keep: keepTemp) { root in
            try await measure(root: root)
        }
    }

    private func measure(root: String) async throws {
        let data = root + "/origin", log = root + "/tools.log"
        progress("origin: generating vid-1 of \(Int(videoSeconds)) s (ffmpeg)")
        let generated = try DownloadPeers.timed(
            binDir + "/cassette-origin",
            [
                "generate", "--out", data, "--tracks-per-station", "1", "--seconds", "2",
                "--video-seconds", String(videoSeconds),
            ], log: root + "/origin.log")
        progress(String(format: "origin: generated in %.1f s", generated))
        let origin = try OriginServer.start(
            binary: binDir + "/cassette-origin", data: data, portFile: root + "/origin.port",
            log: root + "/origin.log"
        ).baseURL

        // The default variant (lowest with video) is v0: its segments, for curl.
        let variant = data + "/media/vid-1/v0/index.m3u8"
        let segments = try String(contentsOfFile: variant, encoding: .utf8).split(separator: "\n")
            .filter { !$0.hasPrefix("#") && !$0.isEmpty }.map(String.init)
        let segmentBytes = try segments.reduce(Int64(0)) { total, name in
            total + ((try FileManager.default.attributesOfItem(atPath: data + "/media/vid-1/v0/" + name)[.size] as? NSNumber)?.int64Value ?? 0)
        }
        progress("vid-1: \(segments.count) segments of the default variant, \(segmentBytes) bytes")
        let license = try licenseHeaders(origin: origin, log: log)

        var cassette: [Double] = [], answered: [Double] = [], ffmpeg: [Double] = [], curl: [Double] = [], curlSync: [Double] = []
        var device: [(total: Double, preamble: Double, files: Int)] = []
        var lastState = ""
        let urls = segments.map { (url: origin + "/media/vid-1/v0/" + $0, name: $0) }
        for round in 1...rounds {
            let folder = "\(root)/c\(round)"
            var runs: [() async throws -> Void] = [
                {
                    let timing = try await offline(origin: origin, folder: folder)
                    cassette.append(timing.done)
                    answered.append(timing.answered)
                    lastState = folder + "/state"
                },
                {
                    let copy = "\(root)/f\(round).ts"
                    ffmpeg.append(
                        try DownloadPeers.timed(
                            "/usr/bin/ffmpeg",
                            [
                                "-nostdin", "-v", "error", "-headers", license,
                                "-i", origin + "/media/vid-1/master.m3u8",
                                "-map", "0:p:1:v:0", "-map", "0:p:1:a:1", "-c", "copy",
                                "-f", "mpegts", copy,
                            ], log: log))
                    try? FileManager.default.removeItem(atPath: copy)
                },
                {
                    curl.append(try DownloadPeers.curlParallel(urls: urls, into: "\(root)/k\(round)", parallel: parallel, log: log).seconds)
                    try? FileManager.default.removeItem(atPath: "\(root)/k\(round)")
                },
                {
                    device.append(try deviceFloor(origin: origin, folder: "\(root)/d\(round)", log: log))
                    try? FileManager.default.removeItem(atPath: "\(root)/d\(round)")
                },
                {
                    curlSync.append(try DownloadPeers.curlParallelThenSync(urls: urls, into: "\(root)/s\(round)", parallel: parallel, log: log).seconds)
                    try? FileManager.default.removeItem(atPath: "\(root)/s\(round)")
                },
            ]
            // The peers take turns, in the opposite order every other round.
            if round % 2 == 0 { runs.reverse() }
            for run in runs {
                // Dirty data of the previous run is flushed (untimed) before each one, as in `download`.
                _ = try DownloadPeers.timed("/usr/bin/sync", [], log: log)
                try await run()
            }
            progress(
                String(
                    format: "round %d: cassette %.3f s, ffmpeg -c copy %.3f s, curl --parallel %.3f s, then sync -f %.3f s, device floor %.3f s",
                    round, cassette.last!, ffmpeg.last!, curl.last!, curlSync.last!, device.last!.total))
            if round < rounds { try? FileManager.default.removeItem(atPath: folder) }
        }
        let median = { (values: [Double]) in DownloadReport.median(values)! }
        var lines = [
            "HLS offline of vid-1 (\(segments.count) segments of the default variant, \(segmentBytes) bytes; median of \(rounds)):",
            String(
                format: "  cassette offline.add → OfflineDone  %7.3f s  (also 3 playlists, subtitles, 2 images; sizes from the GETs; fsync + commit)",
                median(cassette)),
            String(format: "    of which offline.add's answer     %7.3f s  (playbackinfo, license and key, playlists)", median(answered)),
            String(format: "  ffmpeg -i master.m3u8 -c copy       %7.3f s  (decrypts and remuxes; no fsync)", median(ffmpeg)),
            String(format: "  curl --parallel-max %-2d segment list %7.3f s  (no fsync, no check)", parallel, median(curl)),
            String(format: "    then sync -f                      %7.3f s  (curl's launch to sync's exit)", median(curlSync)),
            String(
                format:
                    "  device floor with curl               %7.3f s  (%d files; of which %.3f s before the first segment: playbackinfo, license, master, playlists, key, one after the other; then an fsync per file)",
                median(device.map(\.total)), device.last!.files, median(device.map(\.preamble))),
            "goals (medians of rounds in which the peers take turns):",
        ]
        let alone = GoalRow(
            "HLS vid-1, \(segments.count) segments: offline.add → OfflineDone / curl --parallel \(parallel) of the segments alone",
            cassette: median(cassette), peer: median(curl), unit: " s", goal: nil, .atMost, digits: 3)
        // The same work as Cassette's with standard tools, as a device must order it: the floor.
        let floor = GoalRow(
            "HLS vid-1: offline.add → OfflineDone / device floor (curl: the same requests in a device's order, the same files, an fsync each)",
            cassette: median(cassette), peer: median(device.map(\.total)), unit: " s", goal: nil, .atMost, digits: 3)
        let remux = GoalRow(
            "HLS vid-1: offline.add → OfflineDone / ffmpeg -c copy of the variant", cassette: median(cassette), peer: median(ffmpeg),
            unit: " s", goal: nil, .atMost, digits: 3)
        let rows = [
            GoalRow(
                "HLS vid-1, \(segments.count) segments: offline.add → OfflineDone / curl --parallel \(parallel) of the segments, then sync -f",
                cassette: median(cassette), peer: median(curlSync), unit: " s", goal: 1.0, .atMost, digits: 3),
            floor, alone, remux,
        ]
        lines.append(GoalRow.table(rows))
        if FileManager.default.isExecutableFile(atPath: nginx) {
            lines += try await serve(state: lastState, root: root)
        } else {
            lines.append("serving: \(nginx) missing; skipped")
        }
        print(lines.joined(separator: "\n"))
    }

    /// The floor of Cassette's offline with standard tools: the requests it makes, in the only
    /// order a device can make them (each answer names the next: playbackinfo → license →
    /// master → media playlists → key), then every file it keeps (the default variant's and the
    /// subtitles' segments, the two images) with `curl --parallel`, then an fsync of each file
    /// and of the folder (`sync FILE… FOLDER`), as Cassette makes each file durable. Nothing is
    /// checked; the playlists are fetched together, the rest one curl after the other.
    /// Seconds in all, seconds before the segments' curl starts, and the files kept.
    private func deviceFloor(origin: String, folder: String, log: String) throws -> (total: Double, preamble: Double, files: Int) {
        let begin = monotonicNanos()
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let absolute = { (url: String) in url.hasPrefix("/") ? origin + url : url }
        let info = try curlJSON(["-u", "demo:demo", origin + "/v1/playbackinfo/vid-1?mode=offline"], log: log)
        let request = String(
            decoding: JSONValue.object([
                "productId": "vid-1", "kind": "purchase", "securityToken": info["licenseSecurityToken"] ?? .null,
            ]).serialized(), as: UTF8.self)
        let granted = try curlJSON(["-u", "demo:demo", "-H", "Content-Type: application/json", "-d", request, origin + "/v1/licenses"], log: log)
        guard let licenseId = granted["licenseId"]?.stringValue, let manifest = info["manifest"]?["url"]?.stringValue else {
            throw BenchError("device floor: no license or manifest from the origin")
        }
        let masterURL = absolute(manifest)
        let base = String(masterURL[...masterURL.lastIndex(of: "/")!])
        var kept = [folder + "/master.m3u8"]
        _ = try curlText(["-o", kept[0], masterURL], log: log)
        // The default choice: the lowest variant with video and the default subtitles.
        let playlists = [(name: "v0", uri: "v0/index.m3u8"), (name: "subs-en", uri: "subs-en/index.m3u8")]
        _ = try curlText(["--parallel"] + playlists.flatMap { ["-o", "\(folder)/\($0.name).m3u8", base + $0.uri] }, log: log)
        var files: [(url: String, name: String)] = []
        var keyURI: String?
        for playlist in playlists {
            let path = "\(folder)/\(playlist.name).m3u8"
            kept.append(path)
            for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") {
                if line.hasPrefix("#EXT-X-KEY"), let start = line.range(of: "URI=\"") {
                    keyURI = String(line[start.upperBound...].prefix { $0 != "\"" })
                } else if !line.hasPrefix("#"), !line.isEmpty {
                    files.append((base + playlist.name + "/" + line, playlist.name + "-" + line))
                }
            }
        }
        if let keyURI {
            kept.append(folder + "/key")
            _ = try curlText(["-u", "demo:demo", "-H", "X-License: \(licenseId)", "-o", folder + "/key", absolute(keyURI)], log: log)
        }
        for kind in ["poster", "thumbnail"] {
            if let image = info["images"]?[kind]?.stringValue { files.append((absolute(image), kind)) }
        }
        let preamble = Double(monotonicNanos() - begin) / 1e9
        _ = try DownloadPeers.curlParallel(urls: files, into: folder + "/files", parallel: parallel, log: log)
        kept += files.map { folder + "/files/" + $0.name }
        _ = try DownloadPeers.timedRun("/usr/bin/sync", kept + [folder + "/files", folder], log: log)
        return (Double(monotonicNanos() - begin) / 1e9, preamble, kept.count)
    }

    /// A license for ffmpeg's key requests at the origin: its Basic credentials and `X-License`.
    private func licenseHeaders(origin: String, log: String) throws -> String {
        let info = try curlJSON(["-u", "demo:demo", origin + "/v1/playbackinfo/vid-1?mode=offline"], log: log)
        let body = String(
            decoding: JSONValue.object([
                "productId": "vid-1", "kind": "purchase",
                "securityToken": info["licenseSecurityToken"] ?? .null,
            ]).serialized(), as: UTF8.self)
        let granted = try curlJSON(["-u", "demo:demo", "-H", "Content-Type: application/json", "-d", body, origin + "/v1/licenses"], log: log)
        guard let id = granted["licenseId"]?.stringValue else { throw BenchError("no license from the origin: \(granted)") }
        return "Authorization: Basic \(Data("demo:demo".utf8).base64EncodedString())\r\nX-License: \(id)\r\n"
    }

    /// One Cassette round: a fresh downloader offlines vid-1; seconds from `offline.add` to `OfflineDone`.
    private func offline(origin: String, folder: String) async throws -> (done: Double, answered: Double) {
        let runtime = folder + "/run", state = folder + "/state", config = folder + "/cassette.json"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        try #"{"logLevel":"warning","clientToken":"demo","clientSecret":"demo","downloader":{"maxParallel":\#(parallel)}}"#
            .write(toFile: config, atomically: true, encoding: .utf8)
        let child = try ChildProcesses.shared.launch(
            binDir + "/downloader",
            ["--runtime-dir", runtime, "--state-dir", state, "--origin", origin, "--config", config],
            logFile: folder + "/downloader.log")
        defer { ChildProcesses.shared.stop(child) }
        let client = try await connectWhenListening(runtime + "/downloader.sock", child: child, name: "downloader", seconds: 30)
        defer { Task { await client.close() } }
        let ready = deadline(after: 30)
        while try await client.call("service.status")["catalog"]?["state"]?.stringValue != "ready" {
            guard monotonicNanos() < ready else { throw BenchError("the downloader's catalog was not ready within 30 s") }
            try await Task.sleep(nanoseconds: 5_000_000)
        }
        _ = try await client.call("network.set", ["type": "wifi"])
        _ = try await client.call("events.subscribe", ["topics": ["downloads"]])
        let begin = monotonicNanos()
        let added = try await client.call("offline.add", ["productId": "vid-1"])
        let answeredAt = monotonicNanos()
        guard let token = added["token"]?.stringValue else { throw BenchError("offline.add gave no token: \(added)") }
        let limit = timeout
        let end = try await withThrowingTaskGroup(of: UInt64?.self) { group in
            group.addTask {
                for await event in client.events where event.topic == "downloads" && event.data["token"]?.stringValue == token {
                    if event.type == "OfflineDone" { return monotonicNanos() }
                    if event.type == "OfflineFailed" { throw BenchError("vid-1 failed: \(event.data)") }
                }
                return nil
            }
            group.addTask {
                try await Task.sleep(nanoseconds: UInt64(limit * 1e9))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let done = first else { throw BenchError("vid-1 not offlined within \(Int(limit)) s") }
            return done
        }
        let status = try await client.call("offline.status", ["token": .string(token)])
        guard status["state"]?.stringValue == "cached", status["segments"]?["done"] == status["segments"]?["total"] else {
            throw BenchError("after OfflineDone vid-1 is not complete: \(status)")
        }
        return (Double(end - begin) / 1e9, Double(answeredAt - begin) / 1e9)
    }

    func curlJSON(_ arguments: [String], log: String) throws -> JSONValue {
        let text = try curlText(arguments, log: log)
        return try JSONValue.parse(Array(text.utf8))
    }

    /// curl's standard output (its errors go to `log`).
    func curlText(_ arguments: [String], log: String) throws -> String {
        let output = log + ".out"
        _ = try DownloadPeers.timed("/bin/sh", ["-c", "exec /usr/bin/curl -sS --fail \"$@\" > '\(output)'", "curl"] + arguments, log: log)
        return try String(contentsOfFile: output, encoding: .utf8)
    }
}
