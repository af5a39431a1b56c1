import ArgumentParser
import Foundation
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// `cassette-bench footprint`: what each Cassette binary links and what each daemon holds
/// while idle, beside MPD started in the same run.
struct FootprintBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "footprint",
        abstract: "Shared libraries per binary, and idle memory and threads per daemon beside MPD's.")

    @Option(help: "Folder holding the Cassette binaries.")
    var binDir: String = ".build/release"

    @Option(help: "The MPD binary.")
    var mpd: String = "/usr/bin/mpd"

    @Option(help: "Rounds; each starts the three daemons and MPD afresh, in alternating order.")
    var rounds: Int = 3

    @Option(help: "Seconds each process idles after it answered before it is measured.")
    var idleSeconds: Double = 2

    @Option(help: "service.status (or MPD status) requests over 16 connections before the second measurement.")
    var burstRequests: Int = 20_000

    @Option(help: "Seconds a service may take to start answering.")
    var startTimeout: Double = 15

    @Option(help: "Also write the results as JSON to this file.")
    var json: String?

    @Option(help: "Files of the synthetic station the downloader syncs while its peak is read (0: no sync).")
    var syncFiles: Int = 1000

    @Option(help: "Bytes per file of that station.")
    var syncFileBytes: Int = 200 * 1024

    @Option(help: "Clients recording plays at the reporter, back to back, while its peak is read (0: none).")
    var writers: Int = 8

    @Option(help: "playlog.record calls of those clients, in total.")
    var writerRequests: Int = 20_000

    @Option(help: "The Debian package (make deb) or an installed tree (make install DESTDIR=…) whose size is reported.")
    var package: String?

    @Flag(help: "Leave out MPD.")
    var skipMpd = false

    @Flag(help: "Start the daemons without an origin (no HTTP client, so no transfer threads).")
    var noOrigin = false

    func validate() throws {
        guard (1...50).contains(rounds) else { throw ValidationError("--rounds must be 1...50") }
        guard idleSeconds >= 0, startTimeout > 0 else { throw ValidationError("--idle-seconds must be ≥ 0, --start-timeout > 0") }
        guard burstRequests >= 16 else { throw ValidationError("--burst-requests must be at least 16") }
        guard syncFiles >= 0, syncFileBytes > 0 else { throw ValidationError("--sync-files must be ≥ 0, --sync-file-bytes > 0") }
        guard writers >= 0, writers == 0 || writerRequests >= writers else {
            throw ValidationError("--writers must be ≥ 0 and --writer-requests at least --writers")
        }
    }

    static let daemons = ["downloader", "player", "reporter"]
    /// The synthetic station the downloader syncs under load.
    static let syncStation = "st-load"

    func run() async throws {
        let root = try makeTempRoot(prefix: "cf")
        ChildProcesses.shared.installSignalHandlers { try? FileManager.default.removeItem(atPath: root) }
        defer {
            ChildProcesses.shared.stopAll()
            try? FileManager.default.removeItem(atPath: root)
        }
        let machine = MachineFacts.collect(binDir: binDir)
        var report = FootprintReport()

        // Linked libraries: what the dynamic loader resolves for each binary.
        for name in Self.daemons + ["cassettectl"] {
            let path = URL(fileURLWithPath: binDir).appendingPathComponent(name).path
            report.linked[name] = try? LinkedLibraries.ldd(path, logFile: root + "/ldd-\(name).log")
        }
        if !skipMpd { report.linked["mpd"] = try? LinkedLibraries.ldd(mpd, logFile: root + "/ldd-mpd.log") }

        var origins = Origins()
        if !noOrigin {
            let originBinary = URL(fileURLWithPath: binDir).appendingPathComponent("cassette-origin").path
            origins.demo = try OriginServer.start(
                binary: originBinary, data: root + "/origin", portFile: root + "/origin.port",
                extra: ["--tracks-per-station", "1", "--seconds", "8"],
                log: root + "/origin.log", timeoutSeconds: 120
            ).baseURL
            try #"{"clientToken":"demo","clientSecret":"demo"}"#.write(toFile: root + "/cassette.json", atomically: true, encoding: .utf8)
            if syncFiles > 0 {
                // A second origin serves the station the downloader syncs under load: a synthetic
                // catalog holds only synthetic stations, and the player needs the demo's tr-1.
                progress("origin: generating \(Self.syncStation), \(syncFiles) files of \(syncFileBytes) bytes")
                _ = try DownloadPeers.timed(
                    originBinary,
                    [
                        "generate", "--out", root + "/synthetic", "--synthetic",
                        "\(Self.syncStation)=\(syncFiles)x\(syncFileBytes)",
                    ],
                    log: root + "/synthetic-origin.log")
                origins.sync = try OriginServer.start(
                    binary: originBinary, data: root + "/synthetic", portFile: root + "/synthetic.port",
                    log: root + "/synthetic-origin.log"
                ).baseURL
            }
        }

        for round in 0..<rounds {
            let mpdFirst = round % 2 == 1
            if mpdFirst && !skipMpd { try measureMPD(root: root, round: round, into: &report) }
            try measureCassette(root: root, origins: origins, round: round, into: &report)
            try measureFloors(root: root, round: round, into: &report)
            if !mpdFirst && !skipMpd { try measureMPD(root: root, round: round, into: &report) }
        }
        ChildProcesses.shared.stopAll()
        print(machine.text(mpd: skipMpd ? nil : mpdVersionLine(mpd, logFile: root + "/mpd-version.log")))
        print("")
        print(report.table(rounds: rounds, burst: burstRequests))
        print("")
        var packageSize: PackageSize?
        if let package {
            do {
                packageSize = try PackageSize.measure(package, scratch: root + "/package")
            } catch {
                print("package size: \(error)")
            }
        }
        if let packageSize { print(packageSize.text) }
        print("goals (medians of the rounds; MPD alone, idle, in the same run):")
        print(GoalRow.table(report.goalRows(package: packageSize), peerTitle: "mpd / floor"))
        print("")
        print(
            """
            notes: "ldd" counts the shared objects the loader resolves for the binary (vdso excluded); "mapped" counts the
                   distinct shared objects in /proc/PID/maps of the running daemon (dlopen'ed ones included).
                   RSS, PSS (shared pages divided among the processes mapping them), anonymous RSS and threads come from
                   /proc/PID/status and smaps_rollup, after the catalog is open and \(idleSeconds) s of idling ("idle"), then
                   after \(burstRequests) status requests over 16 connections ("after burst"), and for the player 1.5 s into
                   playing a track streamed from the origin ("playing": FFmpeg opened, compared with MPD idle). Under load, the peak
                   of samples every 50 ms: the downloader while it syncs \(syncFiles) files of \(syncFileBytes) bytes from a second origin
                   ("syncing"), the reporter while \(writers) clients record \(writerRequests) plays back to back ("writers").
                   "floor" is footprint-floor, three of them run together once the daemons stopped: Foundation, a GRDB pool in
                   WAL mode with one write and one read, a SwiftNIO server on a Unix socket with one event loop, and none of
                   Cassette's code, so its RSS is the least any daemon built on these libraries holds, and the three's PSS
                   the least three such daemons sharing one runtime hold.
                   Medians over \(rounds) rounds; MPD (null output, empty music dir) is started alternately before and after the daemons.
                   The daemons share one state dir and \(noOrigin ? "have no origin" : "talk to the reference origin (cassette-origin) on loopback").
            """)
        if let json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(report).write(to: URL(fileURLWithPath: json))
        }
    }

    struct Origins {
        /// The demo catalog (the player's tr-1, the reporter's deliveries).
        var demo: String?
        /// The synthetic station the downloader syncs under load.
        var sync: String?
    }

    private func measureCassette(root: String, origins: Origins, round: Int, into report: inout FootprintReport) throws {
        let origin = origins.demo
        let dir = root + "/r\(round)", state = dir + "/state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        var running: [(String, Child, String)] = []
        defer { for (_, child, _) in running { ChildProcesses.shared.stop(child) } }
        for name in Self.daemons {
            let binary = URL(fileURLWithPath: binDir).appendingPathComponent(name).path
            let runtime = dir + "/run-\(name)"
            var args = ["--runtime-dir", runtime, "--state-dir", state, "--log-level", "warning"]
            if let origin = name == "downloader" ? origins.sync ?? origin : origin {
                args += ["--origin", origin, "--config", root + "/cassette.json"]
            }
            if name == "player" { args += ["--audio-device", "null", "--audio-pace", "realtime"] }
            progress("footprint round \(round + 1): starting \(name)")
            let child = try ChildProcesses.shared.launch(binary, args, logFile: dir + "/\(name).log")
            running.append((name, child, runtime + "/\(name).sock"))
        }
        var connections: [String: CassetteConnection] = [:]
        for (name, _, socket) in running {
            let connection = try CassetteConnection(path: socket, ioTimeout: 10, connectUntil: deadline(after: startTimeout))
            let until = deadline(after: startTimeout)
            while try connection.statusResult()["catalog"]?["state"] != "ready" {
                guard monotonicNanos() < until else { throw BenchError("\(name)'s catalog was not ready within \(startTimeout) s") }
                sleepMicros(5_000)
            }
            connections[name] = connection
        }
        sleepMicros(UInt32(idleSeconds * 1_000_000))
        for (name, child, _) in running {
            report.add(name, idle: try ProcessMemory.read(pid: child.pid))
        }
        for (name, child, socket) in running {
            let many = try (0..<16).map { _ in
                try CassetteConnection(path: socket, ioTimeout: 10, connectUntil: deadline(after: startTimeout))
            }
            _ = try LatencyRun.concurrent(many, total: burstRequests, warmup: 0, timeoutSeconds: 300)
            report.add(name, afterBurst: try ProcessMemory.read(pid: child.pid))
            _ = connections[name]
        }
        // The player once it decodes (FFmpeg opened) and plays a track streamed from the origin.
        if origin != nil, let player = connections["player"], let child = running.first(where: { $0.0 == "player" })?.1 {
            _ = try player.call("player.load", params: #"{"mediaProduct":{"productId":"tr-1"}}"#)
            _ = try player.call("player.play")
            let until = deadline(after: startTimeout)
            while try player.call("player.status")["playbackState"]?.stringValue != "PLAYING" {
                guard monotonicNanos() < until else { throw BenchError("the player did not start playing tr-1 within \(startTimeout) s") }
                sleepMicros(10_000)
            }
            sleepMicros(1_500_000)
            report.add("player", playing: try ProcessMemory.read(pid: child.pid))
        }
        let pids = Dictionary(uniqueKeysWithValues: running.map { ($0.0, $0.1.pid) })
        if origins.sync != nil, let downloader = connections["downloader"], let pid = pids["downloader"] {
            progress("footprint round \(round + 1): the downloader syncs \(syncFiles) files")
            report.add("downloader", loaded: try syncPeak(downloader, pid: pid))
        }
        if writers > 0, let pid = pids["reporter"], let socket = running.first(where: { $0.0 == "reporter" })?.2 {
            progress("footprint round \(round + 1): \(writers) clients record plays at the reporter")
            let clients = try (0..<writers).map { _ in
                try PlaylogConnection(path: socket, ioTimeout: 10, connectUntil: deadline(after: startTimeout))
            }
            let sampler = PeakMemory(pid: pid)
            let run = try LatencyRun.concurrent(clients, total: writerRequests, warmup: 0, timeoutSeconds: 300)
            let peak = try sampler.finish()
            guard run.errors == 0 else { throw BenchError("\(run.errors) playlog.record calls failed under load") }
            report.add("reporter", loaded: peak)
        }
    }

    /// Three `footprint-floor`s together, as the three daemons run, alone on the machine (no
    /// daemon sharing their libraries' pages): one is the floor's row, their sum the floor of
    /// the three daemons' PSS and anonymous memory.
    private func measureFloors(root: String, round: Int, into report: inout FootprintReport) throws {
        let dir = root + "/r\(round)"
        var floors: [Child] = []
        defer { for floor in floors { ChildProcesses.shared.stop(floor) } }
        for index in 0..<3 { floors.append(try startFloor(dir: dir, index: index)) }
        sleepMicros(UInt32(idleSeconds * 1_000_000))
        let each = try floors.map { try ProcessMemory.read(pid: $0.pid) }
        report.add(FootprintReport.floor, idle: each[0])
        report.floorTrio.append(
            ProcessMemory(
                rssKiB: each.reduce(0) { $0 + $1.rssKiB }, pssKiB: each.reduce(0) { $0 + $1.pssKiB },
                anonKiB: each.reduce(0) { $0 + $1.anonKiB }, threads: each.reduce(0) { $0 + $1.threads },
                mappedLibraries: each[0].mappedLibraries))
    }

    /// Starts `footprint-floor` (the daemons' libraries without Cassette) and waits until it is ready.
    private func startFloor(dir: String, index: Int) throws -> Child {
        let folder = dir + "/floor\(index)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let binary = URL(fileURLWithPath: binDir).appendingPathComponent("footprint-floor").path
        let child = try ChildProcesses.shared.launch(binary, [folder], logFile: dir + "/floor\(index).log")
        let until = deadline(after: startTimeout)
        while !FileManager.default.fileExists(atPath: folder + "/floor.ready") {
            guard monotonicNanos() < until else {
                ChildProcesses.shared.stop(child)
                throw BenchError("footprint-floor was not ready within \(startTimeout) s (log: \(dir)/floor\(index).log)")
            }
            sleepMicros(5_000)
        }
        return child
    }

    /// Syncs the synthetic station and returns the downloader's peak until every file is verified.
    private func syncPeak(_ downloader: CassetteConnection, pid: pid_t) throws -> ProcessMemory {
        let sampler = PeakMemory(pid: pid)
        let answer = try downloader.call("stations.sync", params: #"{"stationId":"\#(Self.syncStation)"}"#)
        guard answer["total"]?.intValue == syncFiles else {
            _ = try? sampler.finish()
            throw BenchError("stations.sync answered \(answer), expected \(syncFiles) items")
        }
        let until = deadline(after: 600)
        while try downloader.call("stations.list")["localOffline"]?.arrayValue?
            .first(where: { $0["id"]?.stringValue == Self.syncStation })?["verifiedCount"]?.intValue != syncFiles
        {
            guard monotonicNanos() < until else {
                _ = try? sampler.finish()
                throw BenchError("the downloader did not verify \(syncFiles) files within 600 s")
            }
            sleepMicros(20_000)
        }
        return try sampler.finish()
    }

    private func measureMPD(root: String, round: Int, into report: inout FootprintReport) throws {
        let setup = try MPDSetup(executable: mpd, root: root + "/mpd\(round)")
        progress("footprint round \(round + 1): starting mpd")
        let (process, _) = try setup.start(ioTimeout: 10, startTimeout: startTimeout)
        defer { ChildProcesses.shared.stop(process) }
        sleepMicros(UInt32(idleSeconds * 1_000_000))
        report.add("mpd", idle: try ProcessMemory.read(pid: process.pid))
        let many = try (0..<16).map { _ in
            try MPDConnection(path: setup.socketPath, ioTimeout: 10, connectUntil: deadline(after: startTimeout))
        }
        _ = try LatencyRun.concurrent(many, total: burstRequests, warmup: 0, timeoutSeconds: 300)
        report.add("mpd", afterBurst: try ProcessMemory.read(pid: process.pid))
    }
}
