import ArgumentParser
import Foundation

/// `cassette-bench status`: Cassette's player against MPD, side by side — status round trips on
/// one and on many connections, and cold starts (socket-activated Cassette, plain MPD).
struct StatusBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Benchmarks the Cassette player's service.status against MPD's status, and their cold starts.")

    @Option(help: "Folder holding the Cassette binaries (player).")
    var binDir: String = ".build/release"

    @Option(help: "The MPD binary.")
    var mpd: String = "/usr/bin/mpd"

    @Option(help: "The systemd-socket-activate binary.")
    var socketActivate: String = "/usr/bin/systemd-socket-activate"

    @Option(help: "Requests of the sequential run (one connection).")
    var requests: Int = 10_000

    @Option(help: "Connections of the concurrent run.")
    var connections: Int = 16

    @Option(help: "Requests of the concurrent run, in total over all connections (default: --requests).")
    var concurrentRequests: Int?

    @Option(help: "Untimed requests per connection before each timed run.")
    var warmup: Int = 200

    @Option(help: "Rounds of the latency runs; each runs Cassette and MPD one after the other, the order reversed every other round.")
    var rounds: Int = 3

    @Option(help: "Timed cold starts per peer (plus one untimed first start).")
    var coldStarts: Int = 20

    @Option(help: "Seconds any single read or write may take.")
    var ioTimeout: Double = 10

    @Option(help: "Seconds a service may take to start answering.")
    var startTimeout: Double = 15

    @Option(help: "Seconds the concurrent run may take as a whole.")
    var phaseTimeout: Double = 300

    @Option(help: "Also write the results as JSON to this file.")
    var json: String?

    @Flag(help: "Leave out MPD (its column then shows errors).")
    var skipMpd = false

    @Flag(help: "Keep the temporary folder (it is always kept when something failed).")
    var keepTemp = false

    func validate() throws {
        guard (1...10_000_000).contains(requests) else { throw ValidationError("--requests must be 1...10000000") }
        guard (1...1_000).contains(connections) else { throw ValidationError("--connections must be 1...1000") }
        guard (0...1_000_000).contains(warmup) else { throw ValidationError("--warmup must be 0...1000000") }
        guard (1...1_000).contains(coldStarts) else { throw ValidationError("--cold-starts must be 1...1000") }
        guard (1...100).contains(rounds) else { throw ValidationError("--rounds must be 1...100") }
        guard (concurrentRequests ?? requests) >= connections else { throw ValidationError("--concurrent-requests must be at least --connections") }
        guard ioTimeout > 0, startTimeout > 0, phaseTimeout > 0 else { throw ValidationError("timeouts must be positive") }
    }

    func run() async throws {
        let player = URL(fileURLWithPath: binDir).appendingPathComponent("player").path
        let root = try makeTempRoot(prefix: "cb")
        let keep = keepTemp
        ChildProcesses.shared.installSignalHandlers {
            if !keep { try? FileManager.default.removeItem(atPath: root) }
        }
        var report = BenchReport(
            machine: .collect(binDir: binDir),
            settings: RunSettings(
                sequentialRequests: requests, connections: connections,
                concurrentRequestsTotal: concurrentRequests ?? requests,
                warmupPerConnection: warmup, coldStarts: coldStarts, rounds: rounds, mpdSkipped: skipMpd))
        defer {
            ChildProcesses.shared.stopAll()
            if keepTemp || !report.errors.isEmpty {
                progress("temporary folder kept: \(root)")
            } else {
                try? FileManager.default.removeItem(atPath: root)
            }
        }
        progress("temporary folder \(root); player \(player)")

        if !skipMpd { report.machine.mpdVersion = mpdVersionLine(mpd, logFile: root + "/mpd-version.log") }
        await measureLatency(player: player, root: root, into: &report)
        if !ChildProcesses.shared.isShuttingDown { measureColdStarts(player: player, root: root, into: &report) }

        if ChildProcesses.shared.isShuttingDown {
            // The signal handler is stopping the children and exits with 130; no report.
            for _ in 0..<1_000 { sleepMicros(10_000) }
            throw ExitCode(130)
        }
        // Stop everything before reporting, so the forced-kill count is complete.
        ChildProcesses.shared.stopAll()
        report.forcedKills = ChildProcesses.shared.forcedKills
        print(report.machineText())
        print("")
        print(report.table())
        print("")
        print("goals (medians of the rounds; the floor is cassette-bench nio-floor, run beside the player):")
        print(GoalRow.table(report.goalRows()))
        print("")
        print(
            """
            notes: latencies are client-side round trips (send request → last byte of the answer), measured with the
                   same blocking raw-socket client for both peers, after \(warmup) untimed requests per connection.
                   cold start: Cassette's player runs under `systemd-socket-activate -l PATH --fdname=player` (no --accept):
                   "connect → first answer" starts the clock at connect, once the socket exists, and so covers exec,
                   start-up and the first service.status. MPD has no socket activation in this setup: it is timed from
                   launching `mpd --no-daemon` until its socket answers "status" (connect retried every 100 µs), which
                   is what "launch → first answer" measures for both.
            """)
        if report.forcedKills > 0 { print("warning: \(report.forcedKills) child process(es) ignored SIGTERM for 5 s and were killed") }
        for error in report.errors { print("error: \(error)") }
        if let json {
            try report.json().write(to: URL(fileURLWithPath: json))
            progress("JSON written to \(json)")
        }
        if !report.errors.isEmpty { throw ExitCode(1) }
    }

    /// Starts the player and MPD, then runs the sequential and the concurrent loops on both in
    /// `rounds` alternating rounds; each figure is the median of its rounds.
    private func measureLatency(player: String, root: String, into report: inout BenchReport) async {
        let total = concurrentRequests ?? requests
        let until = { deadline(after: startTimeout) }
        var cassette: CassettePlayer?
        var mpdSocket: String?
        defer {
            if let cassette { ChildProcesses.shared.stop(cassette.process) }
        }
        var mpdProcess: Child?
        defer { if let mpdProcess { ChildProcesses.shared.stop(mpdProcess) } }
        do {
            progress("cassette: starting the player (self-bound)")
            let running = try CassettePlayer.start(binary: player, root: root, ioTimeout: ioTimeout, startTimeout: startTimeout)
            cassette = running
            report.machine.cassetteVersion = running.version
        } catch {
            fail("cassette start: \(error) (log: \(root)/player.log)", into: &report)
        }
        if !skipMpd {
            do {
                let setup = try MPDSetup(executable: mpd, root: root)
                progress("mpd: starting \(mpd) --no-daemon \(setup.configPath)")
                let (process, version) = try setup.start(ioTimeout: ioTimeout, startTimeout: startTimeout)
                mpdProcess = process
                mpdSocket = setup.socketPath
                report.machine.mpdProtocolVersion = version
            } catch {
                fail("mpd start: \(error) (logs: \(root)/m/mpd.log)", into: &report)
            }
        }
        var floor: (process: Child, socket: String)?
        defer { if let floor { ChildProcesses.shared.stop(floor.process) } }
        if let cassette {
            do {
                floor = try startFloor(answerLike: cassette, root: root)
            } catch {
                fail("nio-floor start: \(error) (log: \(root)/nio-floor.log)", into: &report)
            }
        }
        var rounds:
            (
                cs: [LatencyStats], cc: [LatencyStats], cn: [LatencyStats], cnc: [LatencyStats], ms: [LatencyStats],
                mc: [LatencyStats], fs: [LatencyStats], fc: [LatencyStats]
            ) = ([], [], [], [], [], [], [], [])
        var costs:
            (
                cassette: [ServerCost], noOp: [ServerCost], mpd: [ServerCost], cassetteMany: [ServerCost], noOpMany: [ServerCost],
                mpdMany: [ServerCost], floor: [ServerCost], floorMany: [ServerCost]
            ) = ([], [], [], [], [], [], [], [])
        for round in 0..<self.rounds where !ChildProcesses.shared.isShuttingDown {
            let sides = ["cassette", "mpd", "floor"]
            for side in (round % 2 == 1 ? sides.reversed() : sides) {
                do {
                    if side == "cassette", let cassette {
                        progress("round \(round + 1): cassette: \(requests) sequential service.status, \(total) over \(connections) connections")
                        let pid = cassette.process.pid
                        let connect = { try CassetteConnection(path: cassette.socketPath, ioTimeout: self.ioTimeout, connectUntil: until()) }
                        let one = try connect()
                        let (status, statusCost) = try timedSequential(one, pid: pid)
                        rounds.cs.append(status)
                        costs.cassette.append(statusCost)
                        let (noOp, noOpCost) = try timedSequential(NoOpConnection(one), pid: pid)
                        rounds.cn.append(noOp)
                        costs.noOp.append(noOpCost)
                        let (concurrent, concurrentCost) = try timedConcurrent(pid: pid, connect)
                        rounds.cc.append(concurrent)
                        costs.cassetteMany.append(concurrentCost)
                        let (noOpMany, noOpManyCost) = try timedConcurrent(pid: pid) { NoOpConnection(try connect()) }
                        rounds.cnc.append(noOpMany)
                        costs.noOpMany.append(noOpManyCost)
                    } else if side == "mpd", let mpdSocket {
                        progress("round \(round + 1): mpd: \(requests) sequential status, \(total) over \(connections) connections")
                        let pid = mpdProcess?.pid ?? 0
                        let connect = { try MPDConnection(path: mpdSocket, ioTimeout: self.ioTimeout, connectUntil: until()) }
                        let (status, statusCost) = try timedSequential(try connect(), pid: pid)
                        rounds.ms.append(status)
                        costs.mpd.append(statusCost)
                        let (concurrent, concurrentCost) = try timedConcurrent(pid: pid, connect)
                        rounds.mc.append(concurrent)
                        costs.mpdMany.append(concurrentCost)
                    } else if side == "floor", let floor {
                        progress("round \(round + 1): nio-floor: \(requests) sequential, \(total) over \(connections) connections")
                        let connect = { try CassetteConnection(path: floor.socket, ioTimeout: self.ioTimeout, connectUntil: until()) }
                        let (status, statusCost) = try timedSequential(try connect(), pid: floor.process.pid)
                        rounds.fs.append(status)
                        costs.floor.append(statusCost)
                        let (concurrent, concurrentCost) = try timedConcurrent(pid: floor.process.pid, connect)
                        rounds.fc.append(concurrent)
                        costs.floorMany.append(concurrentCost)
                    }
                } catch {
                    fail("\(side) latency, round \(round + 1): \(error)", into: &report)
                }
            }
        }
        report.cassette.sequential = LatencyStats.median(rounds.cs)
        report.cassette.noOpSequential = LatencyStats.median(rounds.cn)
        report.cassette.concurrent = LatencyStats.median(rounds.cc)
        report.mpd.sequential = LatencyStats.median(rounds.ms)
        report.mpd.concurrent = LatencyStats.median(rounds.mc)
        report.cassette.sequentialCost = ServerCost.median(costs.cassette)
        report.cassette.noOpSequentialCost = ServerCost.median(costs.noOp)
        report.mpd.sequentialCost = ServerCost.median(costs.mpd)
        report.cassette.concurrentCost = ServerCost.median(costs.cassetteMany)
        report.cassette.noOpConcurrent = LatencyStats.median(rounds.cnc)
        report.cassette.noOpConcurrentCost = ServerCost.median(costs.noOpMany)
        report.cassette.floorSequential = LatencyStats.median(rounds.fs)
        report.cassette.floorSequentialCost = ServerCost.median(costs.floor)
        report.cassette.floorConcurrent = LatencyStats.median(rounds.fc)
        report.cassette.floorConcurrentCost = ServerCost.median(costs.floorMany)
        report.mpd.concurrentCost = ServerCost.median(costs.mpdMany)
        guard let cassette, !ChildProcesses.shared.isShuttingDown else { return }
        do {
            progress("cassette: the same through Wire.RPCClient")
            report.cassette.rpcClientSequential = try await RPCClientRun.sequential(
                path: cassette.socketPath, count: requests, warmup: warmup, ioTimeout: ioTimeout)
            report.cassette.rpcClientConcurrent = try await RPCClientRun.concurrent(
                path: cassette.socketPath, connections: connections, total: total, warmup: warmup, ioTimeout: ioTimeout)
        } catch {
            fail("cassette through RPCClient: \(error) (log: \(root)/player.log)", into: &report)
        }
    }

    /// `--requests` back to back on `connection`, with what they cost the server `pid`.
    private func timedSequential(_ connection: StatusConnection, pid: pid_t) throws -> (LatencyStats, ServerCost) {
        try ServerCost.measure(pid: pid, requests: requests + warmup) {
            try LatencyRun.sequential(connection, count: requests, warmup: warmup)
        }
    }

    /// `--concurrent-requests` over `--connections` new connections, with what they cost the server.
    private func timedConcurrent(pid: pid_t, _ connect: () throws -> StatusConnection) throws -> (LatencyStats, ServerCost) {
        let total = concurrentRequests ?? requests
        let many = try (0..<connections).map { _ in try connect() }
        return try ServerCost.measure(pid: pid, requests: total + connections * warmup) {
            try LatencyRun.concurrent(many, total: total, warmup: warmup, timeoutSeconds: phaseTimeout)
        }
    }

    /// Starts this binary's `nio-floor` answering frames as long as the player's status answer.
    private func startFloor(answerLike cassette: CassettePlayer, root: String) throws -> (process: Child, socket: String) {
        let size =
            try CassetteConnection(path: cassette.socketPath, ioTimeout: ioTimeout, connectUntil: deadline(after: startTimeout))
            .call(keepBody: true)?.count ?? 0
        let socket = root + "/nio-floor.sock"
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        progress("nio-floor: starting, answers of \(size) bytes")
        let process = try ChildProcesses.shared.launch(
            executable, ["nio-floor", "--socket", socket, "--answer-bytes", "\(size)"],
            logFile: root + "/nio-floor.log")
        return (process, socket)
    }

    private func measureColdStarts(player: String, root: String, into report: inout BenchReport) {
        do {
            progress("cassette: \(coldStarts + 1) socket-activated cold starts")
            report.cassette.coldStart = try ColdStart.cassette(player: player, activator: socketActivate, root: root, coldStartSettings)
        } catch {
            fail("cassette cold start: \(error) (log: \(root)/activation.log)", into: &report)
        }
        guard !skipMpd, !ChildProcesses.shared.isShuttingDown else { return }
        do {
            let setup = try MPDSetup(executable: mpd, root: root)
            progress("mpd: \(coldStarts + 1) cold starts")
            report.mpd.coldStart = try ColdStart.mpd(setup, coldStartSettings)
        } catch {
            fail("mpd cold start: \(error) (logs: \(root)/m/mpd.log)", into: &report)
        }
    }

    private var coldStartSettings: ColdStart.Settings {
        ColdStart.Settings(runs: coldStarts, ioTimeout: ioTimeout, startTimeout: startTimeout)
    }

    private func fail(_ message: String, into report: inout BenchReport) {
        progress("error: \(message)")
        report.errors.append(message)
    }
}

/// Progress goes to stderr so that stdout holds only the report.
func progress(_ message: String) {
    FileHandle.standardError.write(Data("cassette-bench: \(message)\n".utf8))
}
