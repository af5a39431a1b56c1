import ArgumentParser
import Foundation
import Wire

#if canImport(Glibc)
    import Glibc
#endif

/// `cassette-bench download`: the downloader against curl and aria2c over loopback, from the
/// reference origin serving synthetic content and from nginx serving the same files (with the
/// origin behind it for the API) — one large file, and a station of many small ones. Servers
/// and peers run alternately within each round; medians are compared.
struct DownloadBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "download",
        abstract: "Benchmarks the downloader (fsync and SHA-256 included) against curl and aria2c over loopback.")

    @Option(help: "Folder holding the Cassette binaries (downloader, cassette-origin).")
    var binDir: String = ".build/release"

    @Option(help: "Size of the large file in bytes.")
    var bigBytes: Int = 1 << 30

    @Option(help: "Files in the station of small files.")
    var files: Int = 1_000

    @Option(help: "Size of each small file in bytes.")
    var fileBytes: Int = 200 * 1024

    @Option(help: "Rounds of the large-file run (each peer once per round).")
    var bigRounds: Int = 3

    @Option(help: "Rounds of the station run.")
    var stationRounds: Int = 5

    @Option(help: "Parallel transfers: Cassette's downloader.maxParallel, curl's --parallel-max, aria2c's -j.")
    var parallel: Int = 8

    @Option(help: "The nginx binary serving the media files in a second run (skipped when missing).")
    var nginx: String = "/usr/sbin/nginx"

    @Option(help: "The servers measured, comma-separated: origin (the reference origin alone), nginx (media from nginx, API from the origin behind it).")
    var servers: String = "origin,nginx"

    @Option(help: "The aria2c binary (skipped when missing).")
    var aria2c: String = "/usr/bin/aria2c"

    @Option(help: "Seconds one Cassette sync may take.")
    var timeout: Double = 600

    @Flag(help: "Skip the large-file run.")
    var skipBig = false

    @Flag(help: "Skip the station run.")
    var skipStation = false

    @Flag(help: "Keep the temporary folder.")
    var keepTemp = false

    func validate() throws {
        let known = Set(["origin", "nginx"])
        let named = servers.split(separator: ",").map(String.init)
        guard !named.isEmpty, named.allSatisfy(known.contains) else {
            throw ValidationError("--servers lists origin and/or nginx")
        }
        guard bigBytes > 0, files > 0, fileBytes > 0, bigRounds > 0, stationRounds > 0, (1...32).contains(parallel) else {
            throw ValidationError("sizes, counts and rounds must be positive; --parallel 1...32")
        }
    }

    func run() async throws {
        try await inTempRoot(prefix: "cbd", keep: keepTemp) { root in
            try await measure(root: root)
        }
    }

    private func measure(root: String) async throws {
        let origin = binDir + "/cassette-origin"
        let data = root + "/origin", log = root + "/tools.log"
        let big = "st-big", many = "st-many"
        progress("origin: generating synthetic content (1 × \(bigBytes) B, \(files) × \(fileBytes) B)")
        let generated = monotonicNanos()
        _ = try DownloadPeers.timed(
            origin,
            [
                "generate", "--out", data, "--synthetic", "\(big)=1x\(bigBytes)",
                "--synthetic", "\(many)=\(files)x\(fileBytes)",
            ], log: root + "/origin.log")
        progress(String(format: "origin: generated in %.1f s", Double(monotonicNanos() - generated) / 1e9))
        let server = try OriginServer.start(binary: origin, data: data, portFile: root + "/origin.port", log: root + "/origin.log")
        let (originChild, port) = (server.child, server.port)
        let wanted = self.servers.split(separator: ",").map(String.init)
        var servers = wanted.contains("origin") ? [Server(name: "origin", base: "http://127.0.0.1:\(port)", pids: [originChild.pid])] : []
        if !wanted.contains("nginx") {
            // Not asked for.
        } else if FileManager.default.isExecutableFile(atPath: nginx) {
            // Its master's pid is the launched process's: the pid file may come after the port opens.
            let (base, master) = try DownloadServers.startNginx(nginx, folder: root + "/nginx", mediaRoot: data, originPort: port)
            servers.append(Server(name: "nginx", base: base, pids: [master, originChild.pid]))
            progress("nginx: serving the media on \(base)")
        } else {
            progress("nginx: \(nginx) missing; only the reference origin is measured")
        }
        guard !servers.isEmpty else { throw BenchError("no server to measure: \(nginx) is missing") }
        let hasAria = FileManager.default.isExecutableFile(atPath: aria2c)

        var report = DownloadReport(
            parallel: parallel, bigBytes: bigBytes, files: files, fileBytes: fileBytes, aria2Skipped: !hasAria,
            servers: servers.map(\.name))
        if !skipBig {
            let items = try manifest(base: servers[0].base, station: big, root: root)
            guard let item = items.first, items.count == 1 else { throw BenchError("station \(big) should hold one file") }
            for round in 0..<bigRounds {
                var runs: [(Server, String, () async throws -> DownloadReport.Sample)] = []
                for server in round % 2 == 1 ? servers.reversed() : servers {
                    let runner = DownloadCassette(
                        binary: binDir + "/downloader", originURL: server.base, maxParallel: parallel,
                        timeoutSeconds: timeout)
                    var peers: [(Server, String, () async throws -> DownloadReport.Sample)] = [
                        (
                            server, "cassette",
                            {
                                let outcome = try await runner.syncStation(big, expectedFiles: 1, folder: root + "/c\(round)")
                                try Self.verify(outcome.mediaFolder, count: 1, size: Int64(self.bigBytes))
                                report.add(server.name, big: true, "cassette-answer", .init(seconds: outcome.answerSeconds))
                                return .init(seconds: outcome.seconds, cpuSeconds: outcome.cpuSeconds)
                            }
                        ),
                        (
                            server, "curl",
                            {
                                let run = try DownloadPeers.curlOne(url: server.base + item.url, to: root + "/curl.bin", log: log)
                                try DownloadPeers.verify(folder: root, names: ["curl.bin"], size: Int64(self.bigBytes))
                                return .init(seconds: run.seconds, cpuSeconds: run.cpuSeconds)
                            }
                        ),
                        (
                            server, "curl+fsync",
                            {
                                let run = try DownloadPeers.curlOneThenFsync(url: server.base + item.url, to: root + "/curlsync.bin", log: log)
                                try DownloadPeers.verify(folder: root, names: ["curlsync.bin"], size: Int64(self.bigBytes))
                                return .init(seconds: run.seconds, cpuSeconds: run.cpuSeconds)
                            }
                        ),
                    ]
                    if round % 2 == 1 { peers.reverse() }
                    runs += peers
                }
                for (server, peer, body) in runs {
                    try settle(root: root)
                    let serverBefore = server.cpuSeconds()
                    var sample = try await body()
                    sample.serverCPUSeconds = server.cpuSeconds() - serverBefore
                    report.add(server.name, big: true, peer, sample)
                    progress(String(format: "large file, round %d, %@: %@ %.3f s", round + 1, server.name, peer, sample.seconds))
                }
            }
            try settle(root: root)
        }
        if !skipStation {
            let items = try manifest(base: servers[0].base, station: many, root: root)
            guard items.count == files else { throw BenchError("station \(many) lists \(items.count) files, expected \(files)") }
            let names = items.map { $0.id + ".bin" }
            for round in 0..<stationRounds {
                var runs: [(Server, String, () async throws -> DownloadReport.Sample)] = []
                for server in round % 2 == 1 ? servers.reversed() : servers {
                    let runner = DownloadCassette(
                        binary: binDir + "/downloader", originURL: server.base, maxParallel: parallel,
                        timeoutSeconds: timeout)
                    let checked = items.map { (url: server.base + $0.url, name: $0.id + ".bin", sha256: $0.sha256) }
                    let urls = checked.map { (url: $0.url, name: $0.name) }
                    var peers: [(Server, String, () async throws -> DownloadReport.Sample)] = [
                        (
                            server, "cassette",
                            {
                                let outcome = try await runner.syncStation(many, expectedFiles: self.files, folder: root + "/c\(round)\(server.name)")
                                try Self.verify(outcome.mediaFolder, count: self.files, size: Int64(self.fileBytes))
                                report.add(server.name, big: false, "cassette-answer", .init(seconds: outcome.answerSeconds))
                                return .init(seconds: outcome.seconds, cpuSeconds: outcome.cpuSeconds)
                            }
                        ),
                        (
                            server, "curl",
                            {
                                let folder = root + "/curl-\(round)\(server.name)"
                                let run = try DownloadPeers.curlParallel(urls: urls, into: folder, parallel: self.parallel, log: log)
                                try DownloadPeers.verify(folder: folder, names: names, size: Int64(self.fileBytes))
                                return .init(seconds: run.seconds, cpuSeconds: run.cpuSeconds)
                            }
                        ),
                        (
                            server, "curl+verify",
                            {
                                let folder = root + "/curlv-\(round)\(server.name)"
                                let run = try DownloadPeers.curlParallelThenVerify(urls: checked, into: folder, parallel: self.parallel, log: log)
                                try DownloadPeers.verify(folder: folder, names: names, size: Int64(self.fileBytes))
                                return .init(seconds: run.seconds, cpuSeconds: run.cpuSeconds)
                            }
                        ),
                    ]
                    if hasAria {
                        peers.append(
                            (
                                server, "aria2c",
                                {
                                    let folder = root + "/aria-\(round)\(server.name)"
                                    let run = try DownloadPeers.aria2c(self.aria2c, urls: urls, into: folder, parallel: self.parallel, log: log)
                                    try DownloadPeers.verify(folder: folder, names: names, size: Int64(self.fileBytes))
                                    return .init(seconds: run.seconds, cpuSeconds: run.cpuSeconds)
                                }
                            ))
                    }
                    if round % 2 == 1 { peers.reverse() }
                    runs += peers
                }
                for (server, peer, body) in runs {
                    try settle(root: root, removing: false)
                    let serverBefore = server.cpuSeconds()
                    var sample = try await body()
                    sample.serverCPUSeconds = server.cpuSeconds() - serverBefore
                    report.add(server.name, big: false, peer, sample)
                    progress(String(format: "station, round %d, %@: %@ %.3f s", round + 1, server.name, peer, sample.seconds))
                }
            }
            try settle(root: root)
        }
        print(
            report.text(
                machine: MachineFacts.collect(binDir: binDir), disk: ScratchDisk.describe(path: root),
                loadAverage: Self.loadAverage()))
    }

    /// One server the peers fetch from, and the processes whose CPU time counts as its own.
    struct Server {
        var name: String
        var base: String
        var pids: [pid_t]
        func cpuSeconds() -> Double { pids.reduce(0) { $0 + ProcessCPU.treeSeconds(pid: $1) } }
    }

    private static func loadAverage() -> String {
        ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?").split(separator: " ").prefix(3).joined(separator: " ")
    }

    /// Between two timed runs: remove the previous runs' output (unless `removing` is false) and
    /// flush everything dirty (untimed), so no peer pays for another's writeback.
    ///
    /// The station part keeps its outputs until it ends: on ext4 without a journal, creating a
    /// file soon after thousands were deleted makes the inode allocator skip the recently freed
    /// ones one by one (`recently_deleted`), which cost whichever peer ran next a second of
    /// kernel time per thousand files and measured the previous run's deletions, not the peer.
    private func settle(root: String, removing: Bool = true) throws {
        let manager = FileManager.default
        for name in try manager.contentsOfDirectory(atPath: root) where removing {
            if name.hasPrefix("c") && name.dropFirst().first?.isNumber == true || name.hasPrefix("curl") || name.hasPrefix("aria-") {
                try? manager.removeItem(atPath: root + "/" + name)
            }
        }
        sync()
    }

    /// The station's manifest as a fresh device gets it: (id, relative URL, SHA-256) per item.
    private func manifest(base: String, station: String, root: String) throws -> [(id: String, url: String, sha256: String)] {
        let out = root + "/manifest-\(station).json"
        _ = try DownloadPeers.timed(
            "/usr/bin/curl",
            [
                "-sS", "--fail", "-u", "demo:demo", "-X", "POST", "-H", "Content-Type: application/json",
                "-d", "{}", "-o", out, base + "/v1/stations/\(station)/offline",
            ],
            log: root + "/tools.log")
        let json = try JSONValue.parse(Array(try Data(contentsOf: URL(fileURLWithPath: out))))
        return (json["items"]?.arrayValue ?? []).compactMap { item in
            guard let id = item["id"]?.stringValue, let url = item["url"]?.stringValue,
                let sha256 = item["sha256"]?.stringValue
            else { return nil }
            return (id, url, sha256)
        }
    }

    private static func verify(_ folder: String, count: Int, size: Int64) throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: folder)
        guard names.count == count else { throw BenchError("\(folder) holds \(names.count) files, expected \(count)") }
        try DownloadPeers.verify(folder: folder, names: names, size: size)
    }
}
