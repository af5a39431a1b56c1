import ArgumentParser
import Foundation
import GRDB
import Wire

/// `cassette-bench gapless`: the CPU cost of loudness normalization per minute of audio (the
/// player with the mode OFF, then TRACK, on the same FLAC, unpaced to a null output), and a
/// gap/click report of one tone cut into three tracks (FLAC, MP3, AAC/M4A), played through by
/// Cassette (a station, into ALSA's `file` PCM) and by MPD (a queue, into its `pipe` output).
struct GaplessBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gapless", abstract: "Benchmarks normalization CPU cost and gapless borders against MPD.")

    @Option(help: "Folder holding the Cassette binaries (player).") var binDir: String = ".build/release"
    @Option(help: "The MPD binary.") var mpd: String = "/usr/bin/mpd"
    @Option(help: "Seconds of FLAC for the CPU measure.") var seconds: Int = 60

    static let rate = 44_100
    /// Whole 10 ms: FFmpeg 5.1's AAC encoder writes edit lists a few samples off otherwise.
    static let lengths = [57_330, 61_740, 48_510]

    func run() async throws {
        let root = try makePlayerBenchRoot(prefix: "cgb", pcmName: "bench_capture", pcmFile: "capture.raw")
        defer { try? FileManager.default.removeItem(atPath: root) }
        defer { ChildProcesses.shared.stopAll() }

        let reference = try makeAlbum(root: root)
        let player = try await BenchPlayer.start(binDir: binDir, root: root)
        try player.addRows(seconds: seconds)

        print("gapless: normalization CPU on \(seconds) s FLAC 44.1 kHz/16-bit stereo, unpaced null output (best of 2)")
        let off = try await min(player.cpu(mode: "OFF"), player.cpu(mode: "OFF"))
        let on = try await min(player.cpu(mode: "TRACK"), player.cpu(mode: "TRACK"))
        let minutes = Double(seconds) / 60
        print(String(format: "  CPU s per minute   OFF %.3f   TRACK %.3f   normalization %+.3f", off / minutes, on / minutes, (on - off) / minutes))

        print("gapless: one 441 Hz tone cut into 3 tracks of \(Self.lengths) frames; error vs the uncut tone (full scale 1)")
        let mpdRun = try MPDGaplessRun(executable: mpd, root: root)
        for ext in ["flac", "mp3", "m4a"] {
            let cassette = BorderStats(try await player.playAlbum(ext), reference: reference)
            let peer = BorderStats(try mpdRun.play(ext), reference: reference)
            print("  \(ext.padding(toLength: 4, withPad: " ", startingAt: 0)) cassette \(cassette)")
            print("       mpd      \(peer)")
        }
        mpdRun.stop()
        await player.stop()
    }

    /// The uncut tone (interleaved s16) and the three tracks in every format, in both music folders.
    private func makeAlbum(root: String) throws -> [Int16] {
        let total = Self.lengths.reduce(0, +)
        let raw = "\(root)/tone.raw"
        try ffmpeg([
            "-f", "lavfi", "-i", "sine=frequency=441:sample_rate=44100:duration=\(Double(total) / 44_100 + 0.1)",
            "-af", "volume=4", "-ac", "2", "-f", "s16le", raw,
        ])
        let bytes = Array(try [UInt8](Data(contentsOf: URL(fileURLWithPath: raw))).prefix(total * 4))
        var start = 0
        for (index, length) in Self.lengths.enumerated() {
            let cut = "\(root)/cut-\(index).raw"
            try Data(bytes[(start * 4)..<((start + length) * 4)]).write(to: URL(fileURLWithPath: cut))
            for (ext, codec) in [
                ("flac", ["-sample_fmt", "s16"]), ("mp3", ["-c:a", "libmp3lame", "-b:a", "192k"]),
                ("m4a", ["-c:a", "aac", "-b:a", "192k"]),
            ] {
                let file = "\(root)/music/album-\(index).\(ext)"
                try ffmpeg(["-f", "s16le", "-ar", "44100", "-ac", "2", "-i", cut] + codec + [file])
                try FileManager.default.copyItem(atPath: file, toPath: "\(root)/state/media/tracks/album-\(index).\(ext)")
            }
            start += length
        }
        try ffmpeg([
            "-f", "lavfi", "-i", "sine=frequency=440:duration=\(seconds):sample_rate=44100", "-f", "lavfi", "-i",
            "anoisesrc=duration=\(seconds):sample_rate=44100:amplitude=0.1", "-filter_complex", "amix=inputs=2",
            "-ac", "2", "-sample_fmt", "s16", "\(root)/state/media/tracks/long.flac",
        ])
        return bytes.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }
}

func ffmpeg(_ args: [String]) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y"] + args
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw BenchError("ffmpeg \(args.suffix(1)) failed") }
}

/// Samples of a capture against the uncut tone: how the borders compare with the body.
struct BorderStats: CustomStringConvertible {
    var frames = 0
    var expected = 0
    var borderErrors: [Double] = []
    var bodyRMS = 0.0
    var longestZeroRun = 0
    /// For each border, the shift (frames, ±40) that best aligns the 1024 frames after it with
    /// the tone: 0 unless frames were inserted or dropped there (or before it).
    var lags: [Int] = []

    init(_ captured: [Int16], reference: [Int16]) {
        frames = captured.count / 2
        expected = reference.count / 2
        let borders = GaplessBench.lengths.dropLast().reduce(into: [Int]()) { $0.append(($0.last ?? 0) + $1) }
        func error(_ frame: Int, _ shift: Int) -> Double {
            let c = frame + shift
            guard c >= 0, c < frames else { return 1 }
            return abs(Double(captured[2 * c]) - Double(reference[2 * frame])) / 32_768
        }
        lags = borders.map { border in
            func cost(_ lag: Int) -> Double { (border..<(border + 1_024)).reduce(0.0) { $0 + error($1, lag) } }
            return (-40...40).min { cost($0) < cost($1) } ?? 99
        }
        borderErrors = borders.map { border in (max(0, border - 512)..<min(expected, border + 512)).map { error($0, 0) }.max() ?? 1 }
        var sum = 0.0, count = 0
        for frame in stride(from: 0, to: expected, by: 7) where !borders.contains(where: { abs($0 - frame) < 512 }) {
            let e = error(frame, 0)
            sum += e * e
            count += 1
        }
        bodyRMS = count > 0 ? (sum / Double(count)).squareRoot() : 1
        var run = 0
        for frame in 0..<frames {
            if captured[2 * frame] == 0 && captured[2 * frame + 1] == 0 {
                run += 1
                longestZeroRun = max(longestZeroRun, run)
            } else {
                run = 0
            }
        }
    }

    var description: String {
        String(
            format: "frames %d (%+d)  lag after borders %@  border max error %@  body RMS %.5f  longest zero run %d",
            frames, frames - expected, lags.map { "\($0)" }.joined(separator: "/"), borderErrors.map { String(format: "%.4f", $0) }.joined(separator: "/"),
            bodyRMS, longestZeroRun)
    }
}

/// The release player on the bench's catalog: the long FLAC for the CPU measure, and a station
/// per format for the album.
struct BenchPlayer {
    let child: Child
    let client: RPCClient
    let root: String

    static func start(binDir: String, root: String) async throws -> BenchPlayer {
        let child = try ChildProcesses.shared.launch(
            binDir + "/player",
            [
                "--runtime-dir", "\(root)/run", "--state-dir", "\(root)/state", "--audio-device", "bench_capture", "--audio-pace", "device",
            ], logFile: "\(root)/player.log")
        let client = try await connectWhenListening("\(root)/run/player.sock", child: child, name: "player", seconds: 20)
        _ = try await client.call("service.status")
        _ = try await client.call("events.subscribe", ["topics": ["player"]])
        return BenchPlayer(child: child, client: client, root: root)
    }

    func addRows(seconds: Int) throws {
        let db = try DatabaseQueue(path: "\(root)/state/catalog.sqlite")
        try db.write { db in
            func item(_ id: String, _ file: String, _ duration: Double, gain: Bool) throws {
                try db.execute(
                    sql: "INSERT INTO files (urlPath, localPath, state, createdAt) VALUES (?, ?, 'verified', ?)",
                    arguments: ["/media/" + file, "tracks/" + file, Date()])
                try db.execute(
                    sql: """
                        INSERT INTO mediaItems (id, durationSeconds, codec, sampleRate, bitDepth, trackGain, trackPeak, fileId)
                        VALUES (?, ?, 'flac', 44100, 16, ?, ?, ?)
                        """, arguments: [id, duration, gain ? -6.0 : nil, gain ? 0.5 : nil, db.lastInsertedRowID])
            }
            try item("tr-long", "long.flac", Double(seconds), gain: true)
            try db.execute(
                sql: "INSERT INTO offlineProducts (token, requestedProductId, productId, state, requestedAt) VALUES ('b', 'tr-long', 'tr-long', 'cached', ?)",
                arguments: [Date()])
            for ext in ["flac", "mp3", "m4a"] {
                try db.execute(
                    sql: "INSERT INTO stations (id, name, expiresAt, createdAt) VALUES (?, ?, ?, ?)",
                    arguments: ["st-\(ext)", ext, Date().addingTimeInterval(86_400), Date()])
                for index in 0..<3 {
                    try item("\(ext)-\(index)", "album-\(index).\(ext)", 1.4, gain: false)
                    try db.execute(
                        sql: "INSERT INTO stationItems (stationId, itemId, position) VALUES (?, ?, ?)",
                        arguments: ["st-\(ext)", "\(ext)-\(index)", index])
                }
            }
        }
    }

    private func untilIdle() async throws {
        for await event in client.events where event.type == "PlaybackStateChanged" && event.data["playbackState"]?.stringValue == "IDLE" {
            return
        }
    }

    /// CPU seconds the player used to play the long FLAC with `mode`.
    func cpu(mode: String) async throws -> Double {
        _ = try await client.call("player.config.set", ["loudnessNormalizationMode": .string(mode)])
        let before = try processCPUSeconds(child.pid)
        _ = try await client.call("player.load", ["mediaProduct": ["productId": "tr-long"]])
        _ = try await client.call("player.play")
        try await untilIdle()
        return try processCPUSeconds(child.pid) - before
    }

    func playAlbum(_ ext: String) async throws -> [Int16] {
        _ = try await client.call("player.config.set", ["loudnessNormalizationMode": "OFF"])
        _ = try await client.call("station.tune", ["stationId": .string("st-\(ext)")])
        try await untilIdle()
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(root)/capture.raw")))
        return bytes.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    func stop() async {
        await client.close()
        _ = ChildProcesses.shared.stop(child)
    }
}

/// User plus system CPU seconds of `pid` so far (stat(5) fields 14 and 15).
func processCPUSeconds(_ pid: pid_t) throws -> Double {
    let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
    let fields = stat[stat.index(after: stat.lastIndex(of: ")")!)...].split(separator: " ")
    return (Double(fields[11])! + Double(fields[12])!) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// MPD (its gapless MP3 playback on, the default) playing the album as one queue into its
/// `pipe` output, which hands the raw stream to `cat` writing a file.
struct MPDGaplessRun {
    let child: Child
    let mpd: MPDLines
    let root: String

    init(executable: String, root: String) throws {
        self.root = root
        let dir = "\(root)/m"
        let config = """
            music_directory "\(root)/music"
            db_file "\(dir)/database"
            state_file "\(dir)/state"
            log_file "\(dir)/mpd.log"
            pid_file "\(dir)/mpd.pid"
            bind_to_address "\(dir)/mpd.sock"
            auto_update "no"
            zeroconf_enabled "no"
            audio_output {
                type "pipe"
                name "capture"
                command "cat > \(root)/mpd.raw"
                format "44100:16:2"
            }
            """
        try config.write(toFile: "\(dir)/mpd.conf", atomically: true, encoding: .utf8)
        child = try ChildProcesses.shared.launch(executable, ["--no-daemon", "\(dir)/mpd.conf"], logFile: "\(dir)/stderr.log")
        let until = deadline(after: 20)
        var connection: MPDLines?
        while monotonicNanos() < until, connection == nil {
            connection = try? MPDLines(path: "\(dir)/mpd.sock")
            usleep(20_000)
        }
        guard let connection else { throw BenchError("MPD did not listen") }
        mpd = connection
        _ = try mpd.command("update")
        while try mpd.command("status").contains(where: { $0.hasPrefix("updating_db") }) { usleep(20_000) }
    }

    /// Plays the three tracks of `ext` as one queue and returns what the output got.
    func play(_ ext: String) throws -> [Int16] {
        _ = try mpd.command("stop")
        _ = try mpd.command("clear")
        try? FileManager.default.removeItem(atPath: "\(root)/mpd.raw")
        for index in 0..<3 { _ = try mpd.command("add \"album-\(index).\(ext)\"") }
        _ = try mpd.command("play 0")
        usleep(200_000)
        let until = deadline(after: 30)
        while monotonicNanos() < until, try mpd.command("status").contains("state: play") { usleep(20_000) }
        // The pipe output closes `cat` when playback stops; give it a moment to flush.
        _ = try mpd.command("stop")
        usleep(300_000)
        let bytes = (try? [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(root)/mpd.raw")))) ?? []
        return bytes.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    func stop() { _ = ChildProcesses.shared.stop(child) }
}
