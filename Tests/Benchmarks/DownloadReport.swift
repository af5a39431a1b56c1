import Foundation

/// The download benchmark's figures (seconds per run, by peer) and their side-by-side table.
struct DownloadReport {
    var parallel: Int
    var bigBytes: Int
    var files: Int
    var fileBytes: Int
    var aria2Skipped: Bool
    var big: [String: [Double]] = [:]
    var station: [String: [Double]] = [:]
    /// Cassette only: seconds until `stations.sync` answered, per round.
    var bigAnswer: [Double] = []
    var stationAnswer: [Double] = []

    static func median(_ values: [Double]) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let mid = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
    }

    func text(machine: MachineFacts) -> String {
        var lines = ["machine: nproc \(machine.nproc), \(machine.cpuModel), \(machine.memoryTotal) RAM, \(machine.os), kernel \(machine.kernel)",
                     "build:   cassette binaries \(machine.cassetteBuild), cassette-bench \(machine.benchBuild)", ""]
        var big = big, station = station
        if !bigAnswer.isEmpty { big["cassette-answer"] = bigAnswer }
        if !stationAnswer.isEmpty { station["cassette-answer"] = stationAnswer }
        if !big.isEmpty {
            lines.append("1 file of \(bigBytes) B over loopback (\(big["cassette"]?.count ?? 0) rounds; goal: cassette ≥ 0.95 × curl's throughput)")
            lines += table(big, bytes: Double(bigBytes), peers: [
                ("cassette", "cassette downloader (sha256+fsync+rename+dir fsync+catalog)"),
                ("cassette-answer", "  of which: until stations.sync answered"),
                ("curl", "curl -o"),
                ("curl+fsync", "curl -o, then sync FILE (fsync)"),
            ])
            lines.append("")
        }
        if !station.isEmpty {
            lines.append("station of \(files) × \(fileBytes) B over loopback, \(parallel) at once (\(station["cassette"]?.count ?? 0) rounds; goal: cassette no slower than curl --parallel)")
            lines += table(station, bytes: Double(files * fileBytes), peers: [
                ("cassette", "cassette downloader, maxParallel \(parallel) (sha256+fsync per file, grouped commit)"),
                ("cassette-answer", "  of which: until stations.sync answered"),
                ("curl", "curl --parallel --parallel-max \(parallel) -K list"),
                ("aria2c", aria2Skipped ? "aria2c: skipped (not installed)" : "aria2c -j\(parallel) -i list"),
            ])
            lines.append("")
        }
        lines.append("""
            notes: median wall time per peer; the peers run alternately within each round (order reversed every other round).
                   ratio = cassette's throughput / the peer's (above 1: cassette faster).
                   cassette: the release `downloader` on a fresh state folder, timed from sending stations.sync on its socket to
                   the StationDownloadComplete event; it includes the sync request, SHA-256 of every byte (hashed as it
                   arrives), size checks, an fsync of each file on its transfer thread as its body ends (transfers finishing
                   together share the journal commit; no syncfs), rename, one directory fsync and one catalog commit
                   (SQLite, synchronous=FULL) per batch of files completing together. Start-up is not timed.
                   curl and aria2c are timed from launch to exit; they neither hash nor fsync (their data may still be dirty
                   in the page cache when they exit); "curl+fsync" adds coreutils `sync FILE`.
                   page cache: not dropped. The origin's files were just generated and are read from the page cache by
                   every peer alike; before each timed run the previous output is deleted and `sync` flushes all dirty data
                   (untimed), so no run pays for another's writeback. Everything is on the same disk, over 127.0.0.1.
            """)
        return lines.joined(separator: "\n")
    }

    private func table(_ runs: [String: [Double]], bytes: Double, peers: [(String, String)]) -> [String] {
        let cassette = Self.median(runs["cassette"] ?? [])
        var rows = [["peer", "median s", "min s", "max s", "MB/s", "ratio"]]
        for (key, title) in peers {
            guard let values = runs[key], let median = Self.median(values) else {
                rows.append([title, "—", "—", "—", "—", "—"])
                continue
            }
            let ratio = key.hasPrefix("cassette") ? "—" : cassette.map { String(format: "%.2f×", median / $0) } ?? "—"
            rows.append([title, String(format: "%.3f", median), String(format: "%.3f", values.min()!),
                         String(format: "%.3f", values.max()!), key == "cassette-answer" ? "—" : String(format: "%.0f", bytes / median / 1e6), ratio])
        }
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
