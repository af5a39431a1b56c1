import ArgumentParser
import Foundation
import Wire

#if canImport(Glibc)
    import Glibc
#endif

/// `cassette-bench flash`: what the services write to the device's storage, by the kernel's
/// count (`/proc/PID/io`, the source of `cassette_storage_bytes_written_total`), per GiB synced
/// and per hour of playback, beside MPD's state-file writes.
///
/// - Sync: a fresh downloader syncs a synthetic station from the reference origin; every byte
///   it wrote from `stations.sync` to `StationDownloadComplete` (media, the catalog and its WAL,
///   its metrics file), per GiB of media.
/// - Playback: the three services on one state dir, each with a metrics file there; the player
///   plays one FLAC paced to the wall clock (ALSA's null device, `--audio-pace realtime`), its
///   play handed to the reporter and delivered. Two figures: the steady rate while it plays
///   (from 5 s in to 3 s before its end: progress saves, metrics files, saved totals), and
///   what one track costs besides (opening and closing the play, the hand-over, the outbox and
///   the delivery: all the play wrote, less the steady rate over its length). An hour of
///   playback is the steady rate over an hour plus `3600 / --track-seconds` tracks. Time-driven
///   writes scale with the wall clock, so the run is paced, not unpaced.
/// - MPD plays the same FLAC at the same time and is measured the same way: it writes its
///   state file `state_file_interval` after something changed (a song started or ended, a
///   command), not while a song plays on. The run shortens the interval (`--mpd-interval`, 2 s)
///   so that the write after the start falls before the steady window; its default (120 s)
///   delays the same writes, it does not add any.
///
/// Measured on the file system of `TMPDIR` (tmpfs counts no writes: use a disk). The figures
/// do not depend on the build's optimisation, so a debug build measures the same bytes.
struct FlashBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "flash", abstract: "Bytes written per GiB synced and per hour of playback, against MPD's state file.")

    @Option(help: "Folder holding the Cassette binaries.") var binDir: String = ".build/release"
    @Option(help: "The MPD binary (its part is skipped when missing).") var mpd: String = "/usr/bin/mpd"
    @Option(help: "Files of the synced station.") var files: Int = 64
    @Option(help: "MiB per file of the synced station.") var fileMiB: Int = 8
    @Option(help: "Seconds of paced playback (scaled to an hour).") var playSeconds: Int = 300
    @Option(help: "MPD's state_file_interval in the run (its default is 120 s).") var mpdInterval: Int = 2
    @Option(help: "Track length an hour of playback is made of.") var trackSeconds: Int = 210
    @Option(help: "The sync's rate limit in bytes per second (downloader.maxBytesPerSecond; 0: none). A slow link makes more progress writes per GiB.")
    var syncRate: Int = 0
    @Option(help: "The player's playProgressSeconds (its default is 2).") var playProgressSeconds: Double?
    @Flag(help: "Keep the temporary folder.") var keepTemp = false

    func validate() throws {
        guard files > 0, fileMiB > 0, playSeconds >= 30, (1...4).contains(mpdInterval), trackSeconds > 0 else {
            throw ValidationError("--files, --file-mib, --track-seconds positive; --play-seconds at least 30; --mpd-interval 1...4")
        }
    }

    func run() async throws {
        try await inTempRoot(prefix: "cfl", keep: keepTemp) { root in try await measure(root: root) }
    }

    private func measure(root: String) async throws {
        let disk = ScratchDisk.describe(path: root)
        let origin = binDir + "/cassette-origin"
        let station = "st-flash"
        let fileBytes = fileMiB << 20
        progress("origin: generating \(files) × \(fileMiB) MiB")
        _ = try DownloadPeers.timed(
            origin, ["generate", "--out", root + "/origin", "--synthetic", "\(station)=\(files)x\(fileBytes)"], log: root + "/origin.log")
        let server = try OriginServer.start(binary: origin, data: root + "/origin", portFile: root + "/origin.port", log: root + "/origin.log")
        let flac = root + "/music/track.flac"
        try FileManager.default.createDirectory(atPath: root + "/music", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/state/media/tracks", withIntermediateDirectories: true)
        _ = try DownloadPeers.timed(
            "/usr/bin/env",
            [
                "ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y", "-f", "lavfi", "-i",
                "sine=frequency=440:duration=\(playSeconds):sample_rate=44100", "-ac", "2", "-sample_fmt", "s16", flac,
            ], log: root + "/ffmpeg.log")
        let state = root + "/state", runtime = root + "/run", config = root + "/cassette.json"
        let extra = [
            "downloader": syncRate > 0 ? #","maxBytesPerSecond":\#(syncRate)"# : "",
            "player": playProgressSeconds.map { #","playProgressSeconds":\#($0)"# } ?? "",
        ]
        let sections = ["downloader", "player", "reporter"].map { #""\#($0)":{"metricsFile":"\#(state)/\#($0).prom"\#(extra[$0] ?? "")}"# }
        try #"{"logLevel":"notice","clientToken":"demo","clientSecret":"demo",\#(sections.joined(separator: ","))}"#
            .write(toFile: config, atomically: true, encoding: .utf8)
        let common = ["--runtime-dir", runtime, "--state-dir", state, "--origin", server.baseURL, "--config", config]

        // Sync.
        let downloader = try ChildProcesses.shared.launch(binDir + "/downloader", common, logFile: root + "/downloader.log")
        let toDownloader = try await connectWhenListening(runtime + "/downloader.sock", child: downloader, name: "downloader", seconds: 30)
        try await waitCatalogReady(toDownloader)
        _ = try await toDownloader.call("network.set", ["type": "wifi"])
        _ = try await toDownloader.call("events.subscribe", ["topics": ["downloads"]])
        progress("sync: \(files) × \(fileMiB) MiB")
        let syncBefore = ProcessWrites.bytes(pid: downloader.pid)
        let syncBegin = monotonicNanos()
        _ = try await toDownloader.call("stations.sync", ["stationId": .string(station)])
        for await event in toDownloader.events where event.type == "StationDownloadComplete" && event.data["stationId"]?.stringValue == station {
            guard event.data["failed"]?.intValue ?? 0 == 0 else { throw BenchError("files failed: \(event.data)") }
            break
        }
        let synced = ProcessWrites.bytes(pid: downloader.pid) - syncBefore
        let syncSeconds = Double(monotonicNanos() - syncBegin) / 1e9
        let metric = try await writtenTotal(toDownloader)
        let media = Double(files * fileBytes)

        // Playback, with MPD beside it.
        try FileManager.default.copyItem(atPath: flac, toPath: state + "/media/tracks/track.flac")
        try addTrack(catalog: state + "/catalog.sqlite")
        let reporter = try ChildProcesses.shared.launch(binDir + "/reporter", common, logFile: root + "/reporter.log")
        let player = try ChildProcesses.shared.launch(
            binDir + "/player", common + ["--audio-device", "null", "--audio-pace", "realtime"], logFile: root + "/player.log")
        let toPlayer = try await connectWhenListening(runtime + "/player.sock", child: player, name: "player", seconds: 30)
        let toReporter = try await connectWhenListening(runtime + "/reporter.sock", child: reporter, name: "reporter", seconds: 30)
        try await waitCatalogReady(toPlayer)
        let mpdRun = FileManager.default.isExecutableFile(atPath: mpd) ? try startMPD(root: root) : nil
        _ = try await toPlayer.call("events.subscribe", ["topics": ["player"]])
        _ = try await toPlayer.call("player.load", ["mediaProduct": ["productId": "tr-flash"]])
        progress("playback: \(playSeconds) s paced\(mpdRun == nil ? " (MPD missing: \(mpd))" : ", MPD beside it")")
        let services = [downloader, player, reporter]
        func written() -> [Double] { services.map { ProcessWrites.bytes(pid: $0.pid) } + [mpdRun.map { ProcessWrites.bytes(pid: $0.child.pid) } ?? 0] }
        let atPlay = written()
        _ = try await toPlayer.call("player.play")
        if let mpdRun { _ = try mpdRun.lines.command("play 0") }
        try await Task.sleep(for: .seconds(5))
        let steadyFrom = (written(), monotonicNanos())
        try await Task.sleep(for: .seconds(playSeconds - 8))
        let steadyTo = (written(), monotonicNanos())
        for await event in toPlayer.events where event.type == "PlaybackStateChanged" && event.data["playbackState"]?.stringValue == "IDLE" { break }
        let until = deadline(after: 30)
        while (try await toReporter.call("playlog.status"))["plays"]?["delivered"]?.intValue ?? 0 < 1 {
            guard monotonicNanos() < until else { throw BenchError("the play was not delivered within 30 s; see \(root)/reporter.log") }
            try await Task.sleep(for: .milliseconds(100))
        }
        if let mpdRun {
            while try mpdRun.lines.command("status").contains("state: play") { try await Task.sleep(for: .milliseconds(100)) }
            // Its write after the end, `state_file_interval` later.
            try await Task.sleep(for: .seconds(mpdInterval + 1))
        }
        let atEnd = written()
        for client in [toDownloader, toPlayer, toReporter] { await client.close() }
        // Per process: bytes per second while playing, and what the track cost besides.
        let steadySeconds = Double(steadyTo.1 - steadyFrom.1) / 1e9
        let rates = zip(steadyTo.0, steadyFrom.0).map { ($0 - $1) / steadySeconds }
        let perTrack = (0..<rates.count).map { max(0, atEnd[$0] - atPlay[$0] - rates[$0] * Double(playSeconds)) }
        func hour(_ i: Int) -> Double { rates[i] * 3600 + perTrack[i] * 3600 / Double(trackSeconds) }

        let mib = 1_048_576.0, gib = 1_073_741_824.0, kib = 1024.0
        print(
            "flash: \(disk.line); sync of \(files) × \(fileMiB) MiB\(syncRate > 0 ? " at \(syncRate) B/s" : "") in \(String(format: "%.1f", syncSeconds)) s, \(playSeconds) s of paced playback (playProgressSeconds \(playProgressSeconds.map { "\($0)" } ?? "2")), hours of \(trackSeconds) s tracks"
        )
        print(
            String(
                format:
                    "  per GiB synced     %.1f MiB written (media %.1f, catalog + WAL + metrics file %.2f MiB); the downloader's cassette_storage_bytes_written_total after syncing %.1f MiB of media: %.1f MiB",
                synced / (media / gib) / mib, gib / mib, (synced - media) / (media / gib) / mib, media / mib, metric / mib))
        for (i, name) in ["downloader", "player", "reporter"].enumerated() {
            print(
                String(
                    format: "  %@ %.1f KiB per playback hour: %.2f KiB/s while playing, %.1f KiB per track",
                    name, hour(i) / kib, rates[i] / kib, perTrack[i] / kib))
        }
        print(String(format: "  %@ %.1f KiB per playback hour", "cassette (all)", (0..<3).map(hour).reduce(0, +) / kib))
        if mpdRun != nil {
            print(
                String(
                    format: "  %@ %.1f KiB per playback hour: %.2f KiB/s while playing, %.1f KiB per track (state_file, log)",
                    "mpd", hour(3) / kib, rates[3] / kib, perTrack[3] / kib))
        }
    }

    private func waitCatalogReady(_ client: RPCClient) async throws {
        let until = deadline(after: 30)
        while try await client.call("service.status")["catalog"]?["state"]?.stringValue != "ready" {
            guard monotonicNanos() < until else { throw BenchError("the catalog was not ready within 30 s") }
            try await Task.sleep(nanoseconds: 5_000_000)
        }
    }

    /// `cassette_storage_bytes_written_total` from `service.metrics`.
    private func writtenTotal(_ client: RPCClient) async throws -> Double {
        let text = try await client.call("service.metrics")["text"]?.stringValue ?? ""
        let line = text.split(separator: "\n").first { $0.hasPrefix("cassette_storage_bytes_written_total ") }
        return line.flatMap { Double($0.split(separator: " ")[1]) } ?? .nan
    }

    /// The FLAC as an offlined product the player can load.
    private func addTrack(catalog: String) throws {
        _ = try DownloadPeers.timed(
            "/usr/bin/sqlite3",
            [
                catalog,
                """
                INSERT INTO files (urlPath, localPath, state, createdAt) VALUES ('/media/track.flac', 'tracks/track.flac', 'verified', datetime('now'));
                INSERT INTO mediaItems (id, durationSeconds, codec, sampleRate, bitDepth, fileId)
                  SELECT 'tr-flash', \(playSeconds), 'flac', 44100, 16, id FROM files WHERE localPath = 'tracks/track.flac';
                INSERT INTO offlineProducts (token, requestedProductId, productId, state, requestedAt)
                  VALUES ('flash', 'tr-flash', 'tr-flash', 'cached', datetime('now'));
                """,
            ], log: catalog + ".sqlite3.log")
    }

    /// MPD with its state file, its null output paced to the wall clock, the FLAC queued.
    private func startMPD(root: String) throws -> (child: Child, lines: MPDLines) {
        let dir = root + "/m"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let config = """
            music_directory "\(root)/music"
            db_file "\(dir)/database"
            state_file "\(dir)/state"
            state_file_interval "\(mpdInterval)"
            log_file "\(dir)/mpd.log"
            pid_file "\(dir)/mpd.pid"
            bind_to_address "\(dir)/mpd.sock"
            auto_update "no"
            zeroconf_enabled "no"
            connection_timeout "3600"
            audio_output {
                type "null"
                name "null"
                sync "yes"
            }
            """
        try config.write(toFile: dir + "/mpd.conf", atomically: true, encoding: .utf8)
        let child = try ChildProcesses.shared.launch(mpd, ["--no-daemon", dir + "/mpd.conf"], logFile: dir + "/stderr.log")
        let until = deadline(after: 20)
        var connection: MPDLines?
        while monotonicNanos() < until, connection == nil {
            connection = try? MPDLines(path: dir + "/mpd.sock")
            usleep(20_000)
        }
        guard let lines = connection else { throw BenchError("MPD did not listen") }
        _ = try lines.command("update")
        while try lines.command("status").contains(where: { $0.hasPrefix("updating_db") }) { usleep(20_000) }
        _ = try lines.command("add \"track.flac\"")
        return (child, lines)
    }
}

/// Bytes a process made the kernel write to storage: `write_bytes` less `cancelled_write_bytes`
/// of `/proc/PID/io` (the count `cassette_storage_bytes_written_total` is made of).
enum ProcessWrites {
    static func bytes(pid: pid_t) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8) else { return .nan }
        var fields: [Substring: Double] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":")
            if parts.count == 2 { fields[parts[0]] = Double(parts[1].trimmingCharacters(in: .whitespaces)) }
        }
        return (fields["write_bytes"] ?? .nan) - (fields["cancelled_write_bytes"] ?? 0)
    }
}
