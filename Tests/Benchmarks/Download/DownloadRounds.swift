import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The download benchmark's rounds: in each, every peer once per server, in an order reversed
/// every other round, the figures going into the report under the server's name.
extension DownloadBench {
    /// One timed run of a peer; `answerSeconds`: Cassette's, until `stations.sync` answered.
    struct Measured {
        var sample: DownloadReport.Sample
        var answerSeconds: Double? = nil
    }

    typealias PeerRun = (server: Server, peer: String, body: () async throws -> Measured)

    /// The large file: Cassette, `curl -o`, `curl -o` then `sync FILE`, and `curl -o` then
    /// `openssl dgst -sha256` (the CPU floor of a client that verifies what it receives).
    func runBig(_ variant: Variant, url: String, report: inout DownloadReport, log: String) async throws {
        let folder = variant.folder, pin = variant.pin, size = Int64(bigBytes)
        let outputs = [variant.tag + "big-c", variant.tag + "big-curl.bin", variant.tag + "big-curlsync.bin", variant.tag + "big-curlsha.bin"]
        for round in 0..<bigRounds {
            var runs: [PeerRun] = []
            for server in round % 2 == 1 ? variant.servers.reversed() : variant.servers {
                var runner = DownloadCassette(
                    binary: binDir + "/downloader", originURL: server.base, maxParallel: parallel, timeoutSeconds: timeout)
                runner.pin = pin
                var peers: [PeerRun] = [
                    (
                        server, "cassette",
                        {
                            let outcome = try await runner.syncStation("st-big", expectedFiles: 1, folder: folder + "/" + outputs[0])
                            try Self.verify(outcome.mediaFolder, count: 1, size: size)
                            return Measured(sample: .init(seconds: outcome.seconds, cpuSeconds: outcome.cpuSeconds), answerSeconds: outcome.answerSeconds)
                        }
                    ),
                    (
                        server, "curl",
                        {
                            let run = try DownloadPeers.curlOne(url: server.base + url, to: folder + "/" + outputs[1], log: log, pin: pin)
                            try DownloadPeers.verify(folder: folder, names: [outputs[1]], size: size)
                            return Measured(sample: .init(seconds: run.seconds, cpuSeconds: run.cpuSeconds))
                        }
                    ),
                    (
                        server, "curl+fsync",
                        {
                            let run = try DownloadPeers.curlOneThenFsync(url: server.base + url, to: folder + "/" + outputs[2], log: log, pin: pin)
                            try DownloadPeers.verify(folder: folder, names: [outputs[2]], size: size)
                            return Measured(sample: .init(seconds: run.seconds, cpuSeconds: run.cpuSeconds))
                        }
                    ),
                    (
                        server, "curl+sha256",
                        {
                            let run = try DownloadPeers.curlOneThenHash(url: server.base + url, to: folder + "/" + outputs[3], log: log, pin: pin)
                            try DownloadPeers.verify(folder: folder, names: [outputs[3]], size: size)
                            return Measured(sample: .init(seconds: run.seconds, cpuSeconds: run.cpuSeconds))
                        }
                    ),
                ]
                if round % 2 == 1 { peers.reverse() }
                runs += peers
            }
            try await timeRuns(runs, big: true, report: &report, round: round) {
                for name in outputs { try? FileManager.default.removeItem(atPath: folder + "/" + name) }
            }
        }
        for name in outputs { try? FileManager.default.removeItem(atPath: folder + "/" + name) }
    }

    /// The station: Cassette, `curl --parallel`, the same then openssl and `sync -f` (or an
    /// fsync per file), aria2c.
    func runStation(
        _ variant: Variant, station: String, items: [(id: String, url: String, sha256: String)], aria: Bool,
        report: inout DownloadReport, log: String
    ) async throws {
        let names = items.map { $0.id + ".bin" }
        let folder = variant.folder, pin = variant.pin, size = Int64(fileBytes), count = files
        for round in 0..<stationRounds {
            var runs: [PeerRun] = []
            for server in round % 2 == 1 ? variant.servers.reversed() : variant.servers {
                var runner = DownloadCassette(
                    binary: binDir + "/downloader", originURL: server.base, maxParallel: parallel, timeoutSeconds: timeout)
                runner.pin = pin
                let checked = items.map { (url: server.base + $0.url, name: $0.id + ".bin", sha256: $0.sha256) }
                let urls = checked.map { (url: $0.url, name: $0.name) }
                let out = { (peer: String) in "\(folder)/st-\(variant.tag)\(peer)\(round)\(server.folder)" }
                var peers: [PeerRun] = [
                    (
                        server, "cassette",
                        {
                            let outcome = try await runner.syncStation(station, expectedFiles: count, folder: out("c"))
                            try Self.verify(outcome.mediaFolder, count: count, size: size)
                            return Measured(sample: .init(seconds: outcome.seconds, cpuSeconds: outcome.cpuSeconds), answerSeconds: outcome.answerSeconds)
                        }
                    ),
                    (
                        server, "curl",
                        {
                            let run = try DownloadPeers.curlParallel(urls: urls, into: out("curl"), parallel: self.parallel, log: log, pin: pin)
                            try DownloadPeers.verify(folder: out("curl"), names: names, size: size)
                            return Measured(sample: .init(seconds: run.seconds, cpuSeconds: run.cpuSeconds))
                        }
                    ),
                    (
                        server, "curl+verify",
                        {
                            let run = try DownloadPeers.curlParallelThenVerify(urls: checked, into: out("curlv"), parallel: self.parallel, log: log, pin: pin)
                            try DownloadPeers.verify(folder: out("curlv"), names: names, size: size)
                            return Measured(sample: .init(seconds: run.seconds, cpuSeconds: run.cpuSeconds))
                        }
                    ),
                    (
                        server, "curl+verify+fsync",
                        {
                            let run = try DownloadPeers.curlParallelThenVerify(
                                urls: checked, into: out("curlf"), parallel: self.parallel, log: log, pin: pin, fsyncEach: true)
                            try DownloadPeers.verify(folder: out("curlf"), names: names, size: size)
                            return Measured(sample: .init(seconds: run.seconds, cpuSeconds: run.cpuSeconds))
                        }
                    ),
                ]
                if aria {
                    peers.append(
                        (
                            server, "aria2c",
                            {
                                let run = try DownloadPeers.aria2c(self.aria2c, urls: urls, into: out("aria"), parallel: self.parallel, log: log, pin: pin)
                                try DownloadPeers.verify(folder: out("aria"), names: names, size: size)
                                return Measured(sample: .init(seconds: run.seconds, cpuSeconds: run.cpuSeconds))
                            }
                        ))
                }
                if round % 2 == 1 { peers.reverse() }
                runs += peers
            }
            // The station's outputs stay until the bench ends (with its temporary folder or the
            // loop image): on ext4 without a journal, creating a file soon after thousands were
            // deleted makes the inode allocator skip the recently freed ones one by one
            // (`recently_deleted`), which cost whichever peer ran next a second of kernel time per
            // thousand files and measured the previous run's deletions, not the peer.
            try await timeRuns(runs, big: false, report: &report, round: round) {}
        }
    }

    /// Runs each peer after `clear` and a `sync` (untimed: no run pays for another's
    /// writeback), with the server's CPU time around it.
    private func timeRuns(
        _ runs: [PeerRun], big: Bool, report: inout DownloadReport, round: Int, clear: () -> Void
    ) async throws {
        for (server, peer, body) in runs {
            clear()
            sync()
            let serverBefore = server.cpuSeconds()
            var measured = try await body()
            measured.sample.serverCPUSeconds = server.cpuSeconds() - serverBefore
            report.add(server.name, big: big, peer, measured.sample)
            if let answer = measured.answerSeconds { report.add(server.name, big: big, "cassette-answer", .init(seconds: answer)) }
            progress(String(format: "%@, round %d, %@: %@ %.3f s", big ? "large file" : "station", round + 1, server.name, peer, measured.sample.seconds))
        }
    }
}
