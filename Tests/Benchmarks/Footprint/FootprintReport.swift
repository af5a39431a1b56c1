import Foundation

struct FootprintReport: Codable, Sendable {
    var linked: [String: LinkedLibraries] = [:]
    var idle: [String: [ProcessMemory]] = [:]
    var afterBurst: [String: [ProcessMemory]] = [:]
    var playing: [String: [ProcessMemory]] = [:]
    /// Peaks under load: the downloader syncing, the reporter taking plays from many clients.
    var loaded: [String: [ProcessMemory]] = [:]
    /// Three floors idling together, summed.
    var floorTrio: [ProcessMemory] = []

    /// The row of `footprint-floor`: Foundation, GRDB and SwiftNIO without Cassette's code.
    static let floor = "floor"

    mutating func add(_ name: String, idle m: ProcessMemory) { idle[name, default: []].append(m) }
    mutating func add(_ name: String, afterBurst m: ProcessMemory) { afterBurst[name, default: []].append(m) }
    mutating func add(_ name: String, playing m: ProcessMemory) { playing[name, default: []].append(m) }
    mutating func add(_ name: String, loaded m: ProcessMemory) { loaded[name, default: []].append(m) }

    func table(rounds: Int, burst: Int) -> String {
        let order = FootprintBench.daemons + ["cassettectl", "mpd"]
        var lines = ["binary      | ldd | wrapped C libraries linked"]
        lines.append("------------+-----+---------------------------")
        for name in order {
            guard let l = linked[name] else { continue }
            let wrapped = l.wrappedPresent.joined(separator: " ")
            lines.append(pad(name, 11) + " | " + lpad("\(l.names.count)", 3) + " | " + (wrapped.isEmpty ? "none" : wrapped))
        }
        lines.append("")
        lines.append("process     | phase       | mapped | RSS MiB | PSS MiB | anon MiB | threads | RSS / mpd")
        lines.append("------------+-------------+--------+---------+---------+----------+---------+----------")
        let mpdIdle = idle["mpd"].map(Self.median), mpdBurst = afterBurst["mpd"].map(Self.median)
        var idleSum = 0
        for name in FootprintBench.daemons + [Self.floor, "mpd"] {
            for (phase, samples, peer) in [
                ("idle", idle[name], mpdIdle), ("after burst", afterBurst[name], mpdBurst),
                ("playing", playing[name], mpdIdle),
                (name == "downloader" ? "syncing" : "writers", loaded[name], mpdIdle),
            ] {
                guard let samples, !samples.isEmpty else { continue }
                let m = Self.median(samples)
                if phase == "idle" && FootprintBench.daemons.contains(name) { idleSum += m.rssKiB }
                let ratio = peer.map { String(format: "%.2f×", Double(m.rssKiB) / Double(max($0.rssKiB, 1))) } ?? "—"
                lines.append(
                    pad(name, 11) + " | " + pad(phase, 11) + " | " + lpad("\(m.mappedLibraries)", 6) + " | "
                        + lpad(mib(m.rssKiB), 7) + " | " + lpad(mib(m.pssKiB), 7) + " | " + lpad(mib(m.anonKiB), 8) + " | "
                        + lpad("\(m.threads)", 7) + " | " + lpad(name == "mpd" ? "" : ratio, 8))
            }
        }
        lines.append("")
        lines.append("three daemons idle, RSS in total: \(mib(idleSum)) MiB" + (mpdIdle.map { " (mpd alone: \(mib($0.rssKiB)) MiB)" } ?? ""))
        return lines.joined(separator: "\n")
    }

    /// The idle daemons' memory against MPD's, and the package's size.
    func goalRows(package: PackageSize?) -> [GoalRow] {
        let daemons = FootprintBench.daemons.compactMap { idle[$0].map(Self.median) }
        let complete = daemons.count == FootprintBench.daemons.count
        let pss = complete ? daemons.reduce(0) { $0 + $1.pssKiB } : nil
        let anon = complete ? daemons.reduce(0) { $0 + $1.anonKiB } : nil
        let threads = daemons.map { "\($0.threads)" }.joined(separator: "/")
        let mpdIdle = idle["mpd"].map(Self.median)
        let trio = floorTrio.isEmpty ? nil : Self.median(floorTrio)
        let mib = { (kib: Int?) in kib.map { Double($0) / 1024 } }
        let text = { (kib: Int?) in kib.map { String(format: "%.1f MiB", Double($0) / 1024) } ?? "—" }
        return [
            GoalRow("three daemons idle, sum of PSS / MPD alone", cassette: mib(pss), peer: mib(mpdIdle?.pssKiB), unit: " MiB", goal: 0.75, .atMost),
            GoalRow(
                "three daemons idle, anonymous memory / MPD", cassette: mib(anon), peer: mib(mpdIdle?.anonKiB), unit: " MiB", goal: 1.0,
                .atMost),
            GoalRow(reported: "three floors idle (footprint-floor ×3), sum of PSS", cassette: text(pss), peer: text(trio?.pssKiB)),
            GoalRow(reported: "three floors idle, sum of anonymous memory", cassette: text(anon), peer: text(trio?.anonKiB)),
            GoalRow(
                reported: "threads per daemon idle (downloader/player/reporter) / MPD", cassette: threads.isEmpty ? "—" : threads,
                peer: mpdIdle.map { "\($0.threads)" } ?? "—"),
            GoalRow(
                "installed package size (MiB)", value: package.map { Double($0.totalBytes) / 1_048_576 },
                shown: package.map { String(format: "%.1f MiB", Double($0.totalBytes) / 1_048_576) } ?? "—",
                peer: package.map {
                    String(
                        format: "runtime %.1f MiB (ICU %.1f)", Double($0.runtimeBytes) / 1_048_576, Double($0.icuBytes) / 1_048_576)
                } ?? "not measured: --package",
                goal: 60, .atMost),
        ]
    }

    /// Field-wise medians.
    static func median(_ samples: [ProcessMemory]) -> ProcessMemory {
        func m(_ key: KeyPath<ProcessMemory, Int>) -> Int {
            let s = samples.map { $0[keyPath: key] }.sorted()
            return s[(s.count - 1) / 2]
        }
        return ProcessMemory(
            rssKiB: m(\.rssKiB), pssKiB: m(\.pssKiB), anonKiB: m(\.anonKiB),
            threads: m(\.threads), mappedLibraries: m(\.mappedLibraries))
    }
}

private func mib(_ kib: Int) -> String { String(format: "%.1f", Double(kib) / 1024) }
private func pad(_ s: String, _ w: Int) -> String { s + String(repeating: " ", count: max(0, w - s.count)) }
private func lpad(_ s: String, _ w: Int) -> String { String(repeating: " ", count: max(0, w - s.count)) + s }

extension MachineFacts {
    func text(mpd: String?) -> String {
        """
        machine: nproc \(nproc), \(cpuModel), \(memoryTotal) RAM, \(os), kernel \(kernel)
        build:   cassette binaries \(cassetteBuild), cassette-bench \(benchBuild)
        mpd:     \(mpd ?? "skipped")
        """
    }
}
