import ArgumentParser
import Foundation
import Wire

/// `cassette-bench playlog`: the reporter's durable `playlog.record` throughput with one and
/// with many clients, beside a plain SQLite insert+commit loop; then the time to deliver a
/// full outbox to a loopback reference origin, beside the origin ingesting the same plays alone.
struct PlaylogBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "playlog",
        abstract: "Benchmarks the reporter: durable playlog.record throughput and delivery of a queued outbox.")

    @Option(help: "Folder holding the Cassette binaries (reporter, cassette-origin).")
    var binDir: String = ".build/release"

    @Option(help: "Records timed with one client (and with the SQLite peer's one writer).")
    var singleRecords: Int = 3_000

    @Option(help: "Records timed over --clients clients (and the SQLite peer's as many writers).")
    var concurrentRecords: Int = 20_000

    @Option(help: "Concurrent clients.")
    var clients: Int = 8

    @Option(help: "Records queued, then delivered once the origin comes up.")
    var deliver: Int = 100_000

    @Option(help: "Seconds any single read or write may take.")
    var ioTimeout: Double = 30

    @Flag(help: "Keep the temporary folder.")
    var keepTemp = false

    func validate() throws {
        guard singleRecords >= 1, concurrentRecords >= clients, (1...256).contains(clients), deliver >= 1 else {
            throw ValidationError("counts must be positive, --clients 1...256, --concurrent-records ≥ --clients")
        }
    }

    func run() async throws {
        let reporterBinary = binDir + "/reporter", originBinary = binDir + "/cassette-origin"
        try await inTempRoot(prefix: "cbp", keep: keepTemp) { root in
            try await measure(reporterBinary: reporterBinary, originBinary: originBinary, root: root)
        }
    }

    private func measure(reporterBinary: String, originBinary: String, root: String) async throws {
        // The origin's port is chosen now but nothing listens there yet: while the records
        // are timed the origin is "down", so delivery does not compete with recording.
        let port = try Self.freePort()
        let originURL = "http://127.0.0.1:\(port)"
        try #"{"logLevel":"warning","clientToken":"demo","clientSecret":"demo"}"#.write(toFile: root + "/cassette.json", atomically: true, encoding: .utf8)
        progress("reporter: starting (origin \(originURL), down for now)")
        let reporter = try ChildProcesses.shared.launch(
            reporterBinary,
            [
                "--runtime-dir", root + "/run", "--state-dir", root + "/state", "--origin", originURL,
                "--config", root + "/cassette.json",
            ],
            logFile: root + "/reporter.log")
        _ = reporter
        let socketPath = root + "/run/reporter.sock"
        let until = { deadline(after: 20) }
        let control = try PlaylogConnection(path: socketPath, ioTimeout: ioTimeout, connectUntil: until())
        while try control.call("service.status")["catalog"]?["state"]?.stringValue != "ready" { sleepMicros(5_000) }

        progress("reporter: \(singleRecords) playlog.record on 1 connection")
        let one = try PlaylogConnection(path: socketPath, ioTimeout: ioTimeout, connectUntil: until())
        let cassetteOne = try LatencyRun.sequential(one, count: singleRecords, warmup: 50)
        progress("reporter: \(concurrentRecords) playlog.record over \(clients) connections")
        let many: [StatusConnection] = try (0..<clients).map { _ in
            try PlaylogConnection(path: socketPath, ioTimeout: ioTimeout, connectUntil: until())
        }
        let cassetteMany = try LatencyRun.concurrent(many, total: concurrentRecords, warmup: 20, timeoutSeconds: 600)

        progress("peer: SQLite WAL synchronous=FULL, one row per transaction")
        let peerPool = try SQLiteInsertPeer.open(path: root + "/peer.sqlite")
        let peerOne = try LatencyRun.sequential(SQLiteInsertPeer(pool: peerPool), count: singleRecords, warmup: 50)
        let peerMany = try LatencyRun.concurrent(
            (0..<clients).map { _ in SQLiteInsertPeer(pool: peerPool) },
            total: concurrentRecords, warmup: 20, timeoutSeconds: 600)

        // Top the outbox up to --deliver pending plays, then let the origin come up.
        var pending = try control.call("playlog.status")["pending"]?.intValue ?? 0
        if pending < deliver {
            progress("reporter: queueing \(deliver - pending) more plays for the delivery run")
            let fill = try (0..<clients).map { _ in try PlaylogConnection(path: socketPath, ioTimeout: ioTimeout, connectUntil: until()) }
            _ = try LatencyRun.concurrent(fill, total: deliver - pending, warmup: 0, timeoutSeconds: 600)
            pending = try control.call("playlog.status")["pending"]?.intValue ?? 0
        }
        progress("origin: starting on \(originURL) (\(pending) plays waiting)")
        let origin = try ChildProcesses.shared.launch(
            originBinary,
            [
                "serve", "--data", root + "/origin", "--port", "\(port)", "--port-file", root + "/origin.port",
                "--tracks-per-station", "1", "--seconds", "1",
            ],
            logFile: root + "/origin.log")
        let originUntil = deadline(after: 300)
        while !FileManager.default.fileExists(atPath: root + "/origin.port") {
            guard origin.isRunning, monotonicNanos() < originUntil else { throw BenchError("the origin did not start; see \(root)/origin.log") }
            sleepMicros(10_000)
        }
        let begin = monotonicNanos()
        try control.call("playlog.flush")
        var status = JSONValue.null
        while true {
            status = try control.call("playlog.status")
            if status["pending"]?.intValue == 0 { break }
            guard monotonicNanos() - begin < 600 * 1_000_000_000 else { throw BenchError("delivery did not finish in 600 s: \(status)") }
            sleepMicros(5_000)
        }
        let deliverSeconds = Double(monotonicNanos() - begin) / 1e9
        let stats = try Self.originStats(originURL)
        let unique = stats["plays"]?["unique"]?.intValue ?? -1
        let received = stats["plays"]?["received"]?.intValue ?? -1
        let requests = stats["plays"]?["requests"]?.intValue ?? -1
        guard unique == pending else { throw BenchError("the origin counted \(unique) unique plays, expected \(pending)") }

        progress("peer: the origin ingesting \(pending) fresh plays, 500 per request, back to back")
        let peerDeliver = try OriginIngestPeer.post(records: pending, batch: 500, baseURL: originURL)

        func rate(_ stats: LatencyStats) -> String { String(format: "%9.0f /s", stats.throughputPerSecond ?? 0) }
        func micros(_ value: Double) -> String { String(format: "%8.0f µs", value) }
        print(
            """
            playlog.record, durable (answered after commit with synchronous=FULL)
            | run                          | reporter (socket) | p50 / p99           | SQLite peer (in-process) | p50 / p99           |
            |------------------------------|-------------------|---------------------|--------------------------|---------------------|
            | 1 client,  \(String(singleRecords).padding(toLength: 6, withPad: " ", startingAt: 0)) records     | \(rate(cassetteOne))       | \(micros(cassetteOne.p50Micros)) / \(micros(cassetteOne.p99Micros).trimmingCharacters(in: .whitespaces)) | \(rate(peerOne))              | \(micros(peerOne.p50Micros)) / \(micros(peerOne.p99Micros).trimmingCharacters(in: .whitespaces)) |
            | \(clients) clients, \(String(concurrentRecords).padding(toLength: 6, withPad: " ", startingAt: 0)) records     | \(rate(cassetteMany))       | \(micros(cassetteMany.p50Micros)) / \(micros(cassetteMany.p99Micros).trimmingCharacters(in: .whitespaces)) | \(rate(peerMany))              | \(micros(peerMany.p50Micros)) / \(micros(peerMany.p99Micros).trimmingCharacters(in: .whitespaces)) |

            delivery of \(pending) queued plays to the loopback origin (goal: under 10 s)
            | reporter: origin up → nothing pending | \(String(format: "%.2f s", deliverSeconds)) (\(requests) requests, \(received) plays received, \(unique) unique) |
            | peer: origin ingest alone, same count | \(String(format: "%.2f s", peerDeliver)) (URLSession, 500 per POST, back to back) |

            notes: the SQLite peer is GRDB in the benchmark process (WAL, synchronous=FULL, one row per transaction, its
                   \(clients) writers serialised by SQLite's write lock); the reporter adds the socket, JSON, validation and its
                   group commit, which lets concurrent clients share one fsync. Delivery time runs from the origin listening
                   (then playlog.flush) until playlog.status shows nothing pending; it includes marking every play delivered.
            """)
    }

    private static func originStats(_ baseURL: String) throws -> JSONValue {
        let data = try Data(contentsOf: URL(string: baseURL + "/_control/stats")!)
        return try JSONValue.parse(Array(data))
    }

    private static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchError.system("socket") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard ok else { throw BenchError.system("bind 127.0.0.1:0") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
