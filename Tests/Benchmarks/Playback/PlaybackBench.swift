import ArgumentParser
import Foundation
import Wire

/// `cassette-bench playback`: the player against MPD on the same FLAC — CPU seconds per minute
/// of audio played unpaced to a null output, and the time from "play" to the first bytes at
/// the output (a FIFO both write into: ALSA's `file` PCM for Cassette, MPD's `fifo` output).
struct PlaybackBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "playback", abstract: "Benchmarks playback CPU cost and time to first frame against MPD.")

    @Option(help: "Folder holding the Cassette binaries (player).") var binDir: String = ".build/release"
    @Option(help: "The MPD binary.") var mpd: String = "/usr/bin/mpd"
    @Option(help: "Seconds of FLAC to play.") var seconds: Int = 60
    @Option(help: "Timed starts per peer.") var starts: Int = 10

    func run() async throws {
        let root = try makePlayerBenchRoot(prefix: "cpb", pcmName: "bench_fifo", pcmFile: "out.fifo")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let flac = "\(root)/music/track.flac"
        try shell(
            "/usr/bin/env",
            [
                "ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y", "-f", "lavfi", "-i",
                "sine=frequency=440:duration=\(seconds):sample_rate=44100", "-f", "lavfi", "-i",
                "anoisesrc=duration=\(seconds):sample_rate=44100:amplitude=0.1",
                "-filter_complex", "amix=inputs=2", "-ac", "2", "-sample_fmt", "s16", flac,
            ])
        try FileManager.default.copyItem(atPath: flac, toPath: "\(root)/state/media/tracks/track.flac")
        let fifo = "\(root)/out.fifo"
        guard mkfifo(fifo, 0o600) == 0 else { throw BenchError.system("mkfifo") }
        defer { ChildProcesses.shared.stopAll() }

        print("playback: \(seconds) s FLAC 44.1 kHz/16-bit stereo, unpaced null output; \(starts) timed starts to a FIFO")
        let cassetteCPU = try await cassetteCPU(root: root)
        let cassetteStart = try await cassetteFirstFrame(root: root, fifo: fifo)
        let (mpdCPU, mpdStart) = try mpdRun(root: root, flac: flac)
        let minutes = Double(seconds) / 60
        print(String(format: "  CPU s per minute of FLAC   cassette %.3f   mpd %.3f", cassetteCPU / minutes, mpdCPU / minutes))
        print(String(format: "  play -> first frame (ms)   cassette median %.1f   mpd median %.1f", median(cassetteStart), median(mpdStart)))
    }

    // MARK: Cassette

    private func startPlayer(root: String, device: String) async throws -> (Child, RPCClient) {
        let child = try ChildProcesses.shared.launch(
            binDir + "/player",
            [
                "--runtime-dir", "\(root)/run", "--state-dir", "\(root)/state", "--audio-device", device, "--audio-pace", "device",
            ], logFile: "\(root)/player-\(device).log")
        let client = try await connectWhenListening("\(root)/run/player.sock", child: child, name: "player", seconds: 20)
        _ = try await client.call("service.status") // waits for the catalog
        return (child, client)
    }

    private func addTrack(root: String) throws {
        try shell(
            "/usr/bin/sqlite3",
            [
                "\(root)/state/catalog.sqlite",
                """
                INSERT OR IGNORE INTO files (urlPath, localPath, state, createdAt) VALUES ('/media/track.flac', 'tracks/track.flac', 'verified', datetime('now'));
                INSERT OR IGNORE INTO mediaItems (id, durationSeconds, codec, sampleRate, bitDepth, fileId)
                  SELECT 'tr-bench', \(seconds), 'flac', 44100, 16, id FROM files WHERE localPath = 'tracks/track.flac';
                INSERT OR IGNORE INTO offlineProducts (token, requestedProductId, productId, state, requestedAt)
                  VALUES ('bench', 'tr-bench', 'tr-bench', 'cached', datetime('now'));
                """,
            ])
    }

    private func cassetteCPU(root: String) async throws -> Double {
        let (child, client) = try await startPlayer(root: root, device: "null")
        try addTrack(root: root)
        _ = try await client.call("events.subscribe", ["topics": ["player"]])
        let before = try cpuSeconds(child.pid)
        _ = try await client.call("player.load", ["mediaProduct": ["productId": "tr-bench"]])
        _ = try await client.call("player.play")
        for await event in client.events where event.type == "PlaybackStateChanged" && event.data["playbackState"]?.stringValue == "IDLE" { break }
        let used = try cpuSeconds(child.pid) - before
        await client.close()
        _ = ChildProcesses.shared.stop(child)
        return used
    }

    private func cassetteFirstFrame(root: String, fifo: String) async throws -> [Double] {
        let (child, client) = try await startPlayer(root: root, device: "bench_fifo")
        var results: [Double] = []
        for run in 0...starts {
            let fd = open(fifo, O_RDONLY | O_NONBLOCK)
            _ = try await client.call("player.load", ["mediaProduct": ["productId": "tr-bench"]])
            try await Task.sleep(for: .milliseconds(200))
            let sent = monotonicNanos()
            _ = try await client.call("player.play")
            let first = try waitFirstByte(fd)
            if run > 0 { results.append(Double(first - sent) / 1e6) }
            _ = try await client.call("player.reset")
            close(fd)
            try await Task.sleep(for: .milliseconds(100))
        }
        await client.close()
        _ = ChildProcesses.shared.stop(child)
        return results
    }

    // MARK: MPD

    private func mpdRun(root: String, flac: String) throws -> (Double, [Double]) {
        let dir = "\(root)/m"
        let socket = "\(dir)/mpd.sock"
        let config = """
            music_directory "\(root)/music"
            db_file "\(dir)/database"
            state_file "\(dir)/state"
            log_file "\(dir)/mpd.log"
            pid_file "\(dir)/mpd.pid"
            bind_to_address "\(socket)"
            auto_update "no"
            zeroconf_enabled "no"
            audio_output {
                type "null"
                name "null"
                sync "no"
            }
            audio_output {
                type "fifo"
                name "fifo"
                path "\(root)/mpd.fifo"
                enabled "no"
            }
            """
        try config.write(toFile: "\(dir)/mpd.conf", atomically: true, encoding: .utf8)
        let child = try ChildProcesses.shared.launch(mpd, ["--no-daemon", "\(dir)/mpd.conf"], logFile: "\(dir)/stderr.log")
        let until = deadline(after: 20)
        var connection: MPDLines?
        while monotonicNanos() < until, connection == nil {
            connection = try? MPDLines(path: socket)
            usleep(20_000)
        }
        guard let mpd = connection else { throw BenchError("MPD did not listen") }
        _ = try mpd.command("update")
        while try mpd.command("status").contains(where: { $0.hasPrefix("updating_db") }) { usleep(20_000) }
        _ = try mpd.command("add \"track.flac\"")
        let before = try cpuSeconds(child.pid)
        _ = try mpd.command("play 0")
        usleep(100_000)
        while try mpd.command("status").contains("state: play") { usleep(20_000) }
        let used = try cpuSeconds(child.pid) - before

        _ = try mpd.command("disableoutput 0")
        _ = try mpd.command("enableoutput 1")
        var results: [Double] = []
        for run in 0...starts {
            let fd = open("\(root)/mpd.fifo", O_RDONLY | O_NONBLOCK)
            var drain = [UInt8](repeating: 0, count: 65_536)
            while read(fd, &drain, drain.count) > 0 {}
            let sent = monotonicNanos()
            _ = try mpd.command("play 0")
            let first = try waitFirstByte(fd)
            if run > 0 { results.append(Double(first - sent) / 1e6) }
            _ = try mpd.command("stop")
            close(fd)
            usleep(100_000)
        }
        _ = ChildProcesses.shared.stop(child)
        return (used, results)
    }

    // MARK: Helpers

    private func waitFirstByte(_ fd: Int32) throws -> UInt64 {
        var byte = [UInt8](repeating: 0, count: 65_536)
        let until = deadline(after: 10)
        while monotonicNanos() < until {
            if read(fd, &byte, byte.count) > 0 {
                let at = monotonicNanos()
                return at
            }
            usleep(200)
        }
        throw BenchError("no audio reached the FIFO within 10 s")
    }

    private func cpuSeconds(_ pid: pid_t) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        let fields = stat[stat.index(after: stat.lastIndex(of: ")")!)...].split(separator: " ")
        // utime and stime are fields 14 and 15 of stat(5); after the ")" they are the 12th and 13th.
        return (Double(fields[11])! + Double(fields[12])!) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    private func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
    }

    private func shell(_ executable: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BenchError("\(executable) \(arguments.prefix(3)) failed") }
    }
}

/// MPD's line protocol, one command at a time, answer lines up to "OK".
final class MPDLines {
    let socket: RawUnixSocket

    init(path: String) throws {
        socket = try RawUnixSocket.connect(path: path, timeoutSeconds: 10, until: deadline(after: 1))
        _ = try socket.withLine { $0.string }
    }

    func command(_ text: String) throws -> [String] {
        try socket.send(Array((text + "\n").utf8))
        var lines: [String] = []
        while true {
            let line = try socket.withLine { $0.string }
            if line == "OK" { return lines }
            if line.hasPrefix("ACK") { throw BenchError("MPD refused \(text): \(line)") }
            lines.append(line)
        }
    }
}
