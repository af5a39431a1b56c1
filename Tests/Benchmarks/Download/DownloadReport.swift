import Foundation

/// The download benchmark's figures (seconds per run, by peer) and their side-by-side table.
struct DownloadReport {
    var parallel: Int
    var bigBytes: Int
    var files: Int
    var fileBytes: Int
    var aria2Skipped: Bool
    /// The servers measured, in the order they are reported ("origin", "nginx", and the
    /// variants: "nginx, 1 core", "nginx, ext4+journal").
    var servers: [String]
    /// Variants that could not run, each with its reason.
    var skipped: [String] = []
    /// The file system each server's peers wrote to.
    var disks: [String: ScratchDisk] = [:]

    /// One timed run. `cpuSeconds`: the peer's processes; `serverCPUSeconds`: the server's.
    struct Sample {
        var seconds: Double
        var cpuSeconds: Double = 0
        var serverCPUSeconds: Double = 0
    }

    /// Runs by server, then by peer ("cassette-answer": until stations.sync answered).
    var big: [String: [String: [Sample]]] = [:]
    var station: [String: [String: [Sample]]] = [:]

    mutating func add(_ server: String, big isBig: Bool, _ peer: String, _ sample: Sample) {
        if isBig { big[server, default: [:]][peer, default: []].append(sample) } else { station[server, default: [:]][peer, default: []].append(sample) }
    }

    static func median(_ values: [Double]) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let mid = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
    }

    func text(machine: MachineFacts, loadAverage: String) -> String {
        var lines = [
            "machine: nproc \(machine.nproc), \(machine.cpuModel), \(machine.memoryTotal) RAM, \(machine.os), kernel \(machine.kernel)",
            "build:   cassette binaries \(machine.cassetteBuild), cassette-bench \(machine.benchBuild)",
        ]
        var described: Set<String> = []
        for server in servers {
            guard let disk = disks[server], described.insert(disk.line).inserted else { continue }
            lines.append(disk.line + " (\(servers.filter { disks[$0]?.line == disk.line }.joined(separator: "; ")))")
        }
        lines += skipped
        lines += ["load average at the end: \(loadAverage)", ""]
        for server in servers {
            if let big = big[server], !big.isEmpty {
                lines.append(
                    "[\(server)] 1 file of \(bigBytes) B over loopback (\(big["cassette"]?.count ?? 0) rounds)")
                lines += table(
                    big, bytes: Double(bigBytes),
                    peers: [
                        ("cassette", "cassette downloader (sha256+fsync+rename+dir fsync+catalog)"),
                        ("cassette-answer", "  of which: until stations.sync answered"),
                        ("curl", "curl -o"),
                        ("curl+fsync", "curl -o, then sync FILE (fsync)"),
                        ("curl+sha256", "curl -o, then openssl dgst -sha256 FILE"),
                    ])
                lines.append("")
            }
            if let station = station[server], !station.isEmpty {
                lines.append(
                    "[\(server)] station of \(files) × \(fileBytes) B over loopback, \(parallel) at once (\(station["cassette"]?.count ?? 0) rounds)"
                )
                lines += table(
                    station, bytes: Double(files * fileBytes),
                    peers: [
                        ("cassette", "cassette downloader, maxParallel \(parallel) (sha256+fsync per file, grouped commit)"),
                        ("cassette-answer", "  of which: until stations.sync answered"),
                        ("curl", "curl --parallel --parallel-max \(parallel) -K list"),
                        ("curl+verify", "  then openssl sha256 of each file, checked, and sync -f"),
                        ("curl+verify+fsync", "  the same with an fsync per file (sync FILE…) instead of sync -f"),
                        ("aria2c", aria2Skipped ? "aria2c: skipped (not installed)" : "aria2c -j\(parallel) -i list"),
                    ])
                lines.append("")
            }
        }
        lines.append("goals (medians of alternating rounds):")
        lines.append(GoalRow.table(goalRows()))
        lines.append("")
        lines.append(
            """
            notes: median wall time per peer; the peers run alternately within each round (order reversed every other round).
                   ratio (tables per server) = the peer's median time / cassette's (above 1: cassette faster); in the goals, the
                   ratio is cassette's figure / the peer's.
                   "1 core": every peer's processes pinned to the first core (taskset -c 0: a one-core device), the servers
                   on the other cores. "ext4+journal": the peers write to an ext4 with a journal on a loop image the bench
                   made (truncate, mkfs.ext4 -O has_journal, mount -o loop), as a device's data partition has one.
                   cassette: the release `downloader` on a fresh state folder, timed from sending stations.sync on its socket to
                   the StationDownloadComplete event; it includes the sync request, SHA-256 of every byte (hashed as it
                   arrives; past 4 MiB on a thread of its own), the bytes written with O_DIRECT (a file of at most 1 MiB
                   at its end, one of 4 MiB or more in 2 MiB chunks from a writer thread), size checks, and per batch of
                   files completing together: an fsync of each (on eight threads; no syncfs), rename, one directory fsync
                   and one catalog commit (SQLite, synchronous=FULL). Start-up is not timed.
                   CPU s/GiB: user + system CPU seconds per GiB received (cassette: the downloader's /proc/PID/stat from
                   sending stations.sync to the event; curl, aria2c: getrusage of the child); "server CPU": the serving
                   processes' (origin; nginx's master and workers plus the origin behind it) during the run.
                   nginx: nginx-light on loopback, `sendfile on`, keep-alive, serving the origin's media folder; the
                   origin answers the API behind it (proxy_pass). The manifest's relative URLs resolve against nginx.
                   curl and aria2c are timed from launch to exit; they neither hash nor fsync (their data may still be dirty
                   in the page cache when they exit); "curl+fsync" adds coreutils `sync FILE`. The station's second curl row
                   does Cassette's work with standard tools, one step after the other: the same curl, then `openssl dgst -sha256`
                   over every file (each digest checked against the manifest's), then `sync -f` (one syncfs); timed from curl's
                   launch to sync's exit.
                   page cache: not dropped. The origin's files were just generated and are read from the page cache by
                   every peer alike; before each timed run `sync` flushes all dirty data (untimed), so no run pays for
                   another's writeback. The large file's previous output is deleted before each run; the station runs'
                   outputs stay until the station part ends (an ext4 without a journal skips, one by one, each inode freed
                   in the last minutes when it creates a file: a cost of the deletion, not of the peer; "disk" says which
                   file system this was, and TMPDIR chooses it). Everything is on that disk, over 127.0.0.1.
            """)
        return lines.joined(separator: "\n")
    }

    /// The goals, per server and variant: Cassette's figure, the peer's, their ratio, the goal.
    func goalRows() -> [GoalRow] {
        let gib = Double(1 << 30)
        func median(_ runs: [String: [Sample]]?, _ peer: String, _ value: (Sample) -> Double) -> Double? {
            Self.median((runs?[peer] ?? []).map(value))
        }
        let stationGiB = Double(files * fileBytes) / gib
        let bigGiB = Double(bigBytes) / gib
        let stationName = "station \(files) × \(fileBytes / 1024) KiB"
        var rows: [GoalRow] = []
        for server in servers {
            let st = station[server], bg = big[server]
            if st != nil {
                rows.append(
                    GoalRow(
                        "[\(server)] \(stationName): wall s / curl --parallel \(parallel), openssl sha256 checked, sync -f",
                        cassette: median(st, "cassette", \.seconds), peer: median(st, "curl+verify", \.seconds), unit: " s", goal: 0.70,
                        .atMost, digits: 3))
                rows.append(
                    GoalRow(
                        "[\(server)] \(stationName): CPU s/GiB / the same peer's",
                        cassette: median(st, "cassette", \.cpuSeconds).map { $0 / stationGiB },
                        peer: median(st, "curl+verify", \.cpuSeconds).map { $0 / stationGiB }, unit: "", goal: 1.0, .atMost, digits: 2))
                rows.append(
                    GoalRow(
                        "[\(server)] \(stationName): wall s / curl --parallel \(parallel) alone (no check, no sync)",
                        cassette: median(st, "cassette", \.seconds), peer: median(st, "curl", \.seconds), unit: " s", goal: nil, .atMost, digits: 3))
                let perFile: [(value: (Sample) -> Double, what: String, digits: Int, unit: String)] = [
                    ({ $0.seconds }, "wall s", 3, " s"), ({ $0.cpuSeconds / stationGiB }, "CPU s/GiB", 2, ""),
                ]
                for (value, what, digits, unit) in perFile {
                    rows.append(
                        GoalRow(
                            "[\(server)] \(stationName): \(what) / the same peer with an fsync per file, as cassette",
                            cassette: median(st, "cassette", value), peer: median(st, "curl+verify+fsync", value),
                            unit: unit, goal: nil, .atMost, digits: digits))
                }
            }
            if bg != nil {
                let rate = { (seconds: Double) in Double(self.bigBytes) / seconds / 1e6 }
                rows.append(
                    GoalRow(
                        "[\(server)] 1 file of \(bigBytes >> 20) MiB: throughput MB/s / curl -o's",
                        cassette: median(bg, "cassette", \.seconds).map(rate), peer: median(bg, "curl", \.seconds).map(rate), unit: "",
                        goal: 1.0, .atLeast, digits: 0))
                rows.append(
                    GoalRow(
                        "[\(server)] 1 file of \(bigBytes >> 20) MiB: CPU s/GiB / curl -o's",
                        cassette: median(bg, "cassette", \.cpuSeconds).map { $0 / bigGiB },
                        peer: median(bg, "curl", \.cpuSeconds).map { $0 / bigGiB }, unit: "", goal: 1.1, .atMost, digits: 2))
                rows.append(
                    GoalRow(
                        "[\(server)] 1 file of \(bigBytes >> 20) MiB: CPU s/GiB / curl -o, then openssl sha256 (floor: receive and hash)",
                        cassette: median(bg, "cassette", \.cpuSeconds).map { $0 / bigGiB },
                        peer: median(bg, "curl+sha256", \.cpuSeconds).map { $0 / bigGiB }, unit: "", goal: nil, .atMost, digits: 2))
            }
        }
        return rows
    }

    private func table(_ runs: [String: [Sample]], bytes: Double, peers: [(String, String)]) -> [String] {
        let cassette = Self.median((runs["cassette"] ?? []).map(\.seconds))
        let gib = bytes / Double(1 << 30)
        var rows = [["peer", "median s", "min s", "max s", "MB/s", "ratio", "CPU s/GiB", "server CPU s/GiB"]]
        for (key, title) in peers {
            guard let samples = runs[key], let median = Self.median(samples.map(\.seconds)) else {
                rows.append([title, "—", "—", "—", "—", "—", "—", "—"])
                continue
            }
            let values = samples.map(\.seconds)
            let answer = key == "cassette-answer"
            let ratio = key.hasPrefix("cassette") ? "—" : cassette.map { String(format: "%.2f×", median / $0) } ?? "—"
            rows.append([
                title, String(format: "%.3f", median), String(format: "%.3f", values.min()!),
                String(format: "%.3f", values.max()!), answer ? "—" : String(format: "%.0f", bytes / median / 1e6), ratio,
                answer ? "—" : String(format: "%.2f", Self.median(samples.map(\.cpuSeconds))! / gib),
                answer ? "—" : String(format: "%.2f", Self.median(samples.map(\.serverCPUSeconds))! / gib),
            ])
        }
        return Self.format(rows)
    }

    static func format(_ rows: [[String]]) -> [String] {
        var widths = Array(repeating: 0, count: rows[0].count)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        var out: [String] = []
        for (index, row) in rows.enumerated() {
            let cells = row.enumerated().map { i, cell in
                let pad = String(repeating: " ", count: widths[i] - cell.count)
                return i == 0 ? cell + pad : pad + cell
            }
            out.append("| " + cells.joined(separator: " | ") + " |")
            if index == 0 { out.append("|" + widths.map { String(repeating: "-", count: $0 + 2) }.joined(separator: "|") + "|") }
        }
        return out
    }
}
