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

    @Flag(help: "Skip the runs with the peers pinned to one core (taskset -c 0; the servers on the other cores).")
    var skipOneCore = false

    @Flag(help: "Skip the runs on a journaled ext4 loop image made by the bench (needs root).")
    var skipExt4 = false

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
        var servers =
            wanted.contains("origin") ? [Server(name: "origin", folder: "origin", base: "http://127.0.0.1:\(port)", pids: [originChild.pid])] : []
        if !wanted.contains("nginx") {
            // Not asked for.
        } else if FileManager.default.isExecutableFile(atPath: nginx) {
            // Its master's pid is the launched process's: the pid file may come after the port opens.
            let (base, master) = try DownloadServers.startNginx(nginx, folder: root + "/nginx", mediaRoot: data, originPort: port)
            servers.append(Server(name: "nginx", folder: "nginx", base: base, pids: [master, originChild.pid]))
            progress("nginx: serving the media on \(base)")
        } else {
            progress("nginx: \(nginx) missing; only the reference origin is measured")
        }
        guard let last = servers.last else { throw BenchError("no server to measure: \(nginx) is missing") }
        let hasAria = FileManager.default.isExecutableFile(atPath: aria2c)

        // The plain runs on every server; the one-core and ext4 runs on the last (nginx when measured).
        var variants = [Variant(servers: servers, folder: root, pin: .none, tag: "")]
        var skipped: [String] = []
        if !skipOneCore {
            variants.append(Variant(servers: [last.renamed(last.name + ", 1 core")], folder: root, pin: .firstCore, tag: "p"))
        }
        var disk: LoopDisk?
        defer { disk?.unmount() }
        if !skipExt4 {
            switch LoopDisk.make(in: root + "/x4", bytes: imageBytes(peers: hasAria ? 5 : 4), log: log) {
            case .success(let made):
                disk = made
                variants.append(Variant(servers: [last.renamed(last.name + ", ext4+journal")], folder: made.mountPoint, pin: .none, tag: "x"))
                progress("ext4: journaled loop image mounted on \(made.mountPoint)")
            case .failure(let why):
                skipped.append("ext4 with a journal (loop image): skipped, mounting is not possible here: \(why)")
                progress(skipped.last!)
            }
        }

        var report = DownloadReport(
            parallel: parallel, bigBytes: bigBytes, files: files, fileBytes: fileBytes, aria2Skipped: !hasAria,
            servers: variants.flatMap { $0.servers.map(\.name) }, skipped: skipped)
        var disks: [String: ScratchDisk] = [:]
        for variant in variants { for server in variant.servers { disks[server.name] = ScratchDisk.describe(path: variant.folder) } }
        report.disks = disks
        if !skipBig {
            let items = try manifest(base: servers[0].base, station: big, root: root)
            guard let item = items.first, items.count == 1 else { throw BenchError("station \(big) should hold one file") }
            for variant in variants {
                try await pinningServers(variant, log: log) { try await runBig(variant, url: item.url, report: &report, log: log) }
            }
        }
        if !skipStation {
            let items = try manifest(base: servers[0].base, station: many, root: root)
            guard items.count == files else { throw BenchError("station \(many) lists \(items.count) files, expected \(files)") }
            for variant in variants {
                try await pinningServers(variant, log: log) {
                    // aria2c (no goal of its own, and the slowest peer) in the plain runs only.
                    try await runStation(variant, station: many, items: items, aria: hasAria && variant.tag.isEmpty, report: &report, log: log)
                }
            }
        }
        print(report.text(machine: MachineFacts.collect(binDir: binDir), loadAverage: Self.loadAverage()))
    }

    /// The ext4 image's size: every station round's outputs stay until the station part ends.
    private func imageBytes(peers: Int) -> Int {
        let station = stationRounds * peers * files * (fileBytes + 4096)
        return max(station, 2 * bigBytes) * 5 / 4 + (512 << 20)
    }

    /// Runs `body` with the servers of a pinned variant on the cores its peers leave free, and
    /// gives them every core back afterwards.
    private func pinningServers(_ variant: Variant, log: String, _ body: () async throws -> Void) async throws {
        guard variant.pin.cores != nil, let others = CPUPin.otherCores else { return try await body() }
        let pids = variant.servers.flatMap(\.pids)
        try CPUPin.move(pids, to: others, log: log)
        do {
            try await body()
        } catch {
            try? CPUPin.move(pids, to: CPUPin.allCores, log: log)
            throw error
        }
        try CPUPin.move(pids, to: CPUPin.allCores, log: log)
    }

    /// One server the peers fetch from, and the processes whose CPU time counts as its own.
    struct Server {
        /// The name its figures are reported under ("nginx", "nginx, 1 core").
        var name: String
        /// A short name for the peers' output folders ("nginx").
        var folder: String
        var base: String
        var pids: [pid_t]
        func cpuSeconds() -> Double { pids.reduce(0) { $0 + ProcessCPU.treeSeconds(pid: $1) } }
        func renamed(_ name: String) -> Server {
            var server = self
            server.name = name
            return server
        }
    }

    /// One set of rounds: the servers, the folder the peers write to (its file system), and the
    /// cores the peers run on; `tag` keeps its outputs' names apart from the other sets'.
    struct Variant {
        var servers: [Server]
        var folder: String
        var pin: CPUPin
        var tag: String
    }

    static func loadAverage() -> String {
        ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?").split(separator: " ").prefix(3).joined(separator: " ")
    }

    /// The station's manifest as a fresh device gets it: (id, relative URL, SHA-256) per item.
    func manifest(base: String, station: String, root: String) throws -> [(id: String, url: String, sha256: String)] {
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

    static func verify(_ folder: String, count: Int, size: Int64) throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: folder)
        guard names.count == count else { throw BenchError("\(folder) holds \(names.count) files, expected \(count)") }
        try DownloadPeers.verify(folder: folder, names: names, size: size)
    }
}
