import Foundation

struct RunSettings: Codable, Sendable {
    var sequentialRequests: Int
    var connections: Int
    /// Requests of the concurrent run, in total over all connections (not per connection).
    var concurrentRequestsTotal: Int
    var warmupPerConnection: Int
    var coldStarts: Int
    var rounds: Int
    var mpdSkipped: Bool
}

struct PeerResults: Codable, Sendable {
    var sequential: LatencyStats?
    /// Cassette only: an unknown method on one connection, the protocol's own round trip.
    var noOpSequential: LatencyStats?
    /// The server's CPU time and context switches per request of the runs above.
    var sequentialCost: ServerCost?
    var noOpSequentialCost: ServerCost?
    /// Cassette's column only: a bare SwiftNIO server answering fixed bytes (`nio-floor`).
    var floorSequential: LatencyStats?
    var floorSequentialCost: ServerCost?
    var floorConcurrent: LatencyStats?
    var floorConcurrentCost: ServerCost?
    var concurrentCost: ServerCost?
    var concurrent: LatencyStats?
    /// Cassette only: the no-op over the concurrent run's connections, the request path's own
    /// cost there without the status answer.
    var noOpConcurrent: LatencyStats?
    var noOpConcurrentCost: ServerCost?
    /// Cassette only: the same loops through `Wire.RPCClient`.
    var rpcClientSequential: LatencyStats?
    var rpcClientConcurrent: LatencyStats?
    var coldStart: ColdStartResult?
}

struct BenchReport: Codable, Sendable {
    var machine: MachineFacts
    var settings: RunSettings
    var cassette = PeerResults()
    var mpd = PeerResults()
    var errors: [String] = []
    /// Children that ignored SIGTERM for 5 s and were killed with SIGKILL.
    var forcedKills = 0

    func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(self)
    }

    /// The side-by-side table: metric | cassette | mpd.
    func table() -> String {
        let s = settings
        var rows: [Row] = []
        let missing = s.mpdSkipped ? "skipped" : "error"
        func latency(
            _ title: String, _ c: LatencyStats?, _ m: LatencyStats?, mpdNote: String? = nil,
            cost: (ServerCost?, ServerCost?)? = nil
        ) {
            let mpdNote = mpdNote ?? missing
            rows.append(.section(title))
            rows.append(.values("  p50 (µs)", c.map { f1($0.p50Micros) }, m.map { f1($0.p50Micros) }, mpdNote))
            rows.append(.values("  p99 (µs)", c.map { f1($0.p99Micros) }, m.map { f1($0.p99Micros) }, mpdNote))
            rows.append(.values("  mean (µs)", c.map { f1($0.meanMicros) }, m.map { f1($0.meanMicros) }, mpdNote))
            rows.append(
                .values(
                    "  throughput (req/s)", c.flatMap { $0.throughputPerSecond.map(f0) },
                    m.flatMap { $0.throughputPerSecond.map(f0) }, mpdNote))
            if let (cc, mc) = cost {
                rows.append(.values("  server CPU per request (µs)", cc.map { f1($0.cpuMicrosPerRequest) }, mc.map { f1($0.cpuMicrosPerRequest) }, mpdNote))
                rows.append(
                    .values("  server context switches per request", cc.map { f2($0.switchesPerRequest) }, mc.map { f2($0.switchesPerRequest) }, mpdNote))
            }
        }
        let perConn = s.concurrentRequestsTotal / max(s.connections, 1)
        rows.append(.section("latency runs: \(s.rounds) rounds, Cassette and MPD alternately (order reversed every other round); medians of the rounds"))
        latency(
            "status round trip, 1 connection, \(s.sequentialRequests) sequential requests (raw socket client)",
            cassette.sequential, mpd.sequential, cost: (cassette.sequentialCost, mpd.sequentialCost))
        latency(
            "cassette no-op round trip (unknown method → MethodNotFound), 1 connection, \(s.sequentialRequests) sequential",
            cassette.noOpSequential, nil, mpdNote: "—", cost: (cassette.noOpSequentialCost, nil))
        latency(
            "floor: a bare SwiftNIO server answering fixed bytes of the same size, 1 connection, \(s.sequentialRequests) sequential",
            cassette.floorSequential, nil, mpdNote: "—", cost: (cassette.floorSequentialCost, nil))
        latency(
            "status round trip, \(s.connections) connections, \(s.concurrentRequestsTotal) requests in total (~\(perConn) each, 1 thread per connection)",
            cassette.concurrent, mpd.concurrent, cost: (cassette.concurrentCost, mpd.concurrentCost))
        latency(
            "cassette no-op, \(s.connections) connections, \(s.concurrentRequestsTotal) in total",
            cassette.noOpConcurrent, nil, mpdNote: "—", cost: (cassette.noOpConcurrentCost, nil))
        latency(
            "floor: the bare SwiftNIO server, \(s.connections) connections, \(s.concurrentRequestsTotal) in total",
            cassette.floorConcurrent, nil, mpdNote: "—", cost: (cassette.floorConcurrentCost, nil))
        latency(
            "cassette through Wire.RPCClient (SwiftNIO, async), 1 connection, \(s.sequentialRequests) sequential",
            cassette.rpcClientSequential, nil, mpdNote: "—")
        latency(
            "cassette through Wire.RPCClient, \(s.connections) connections, \(s.concurrentRequestsTotal) in total",
            cassette.rpcClientConcurrent, nil, mpdNote: "—")
        let c = cassette.coldStart, m = mpd.coldStart
        rows.append(.section("cold start, \(s.coldStarts) runs (after one untimed first start on an empty state dir)"))
        let noActivation = "n/a: no socket activation"
        rows.append(.values("  connect → first answer, p50 (ms)", c?.connectToAnswer.map { f2($0.p50Micros / 1000) }, nil, noActivation))
        rows.append(.values("  connect → first answer, mean (ms)", c?.connectToAnswer.map { f2($0.meanMicros / 1000) }, nil, noActivation))
        rows.append(.values("  connect → first answer, max (ms)", c?.connectToAnswer.map { f2($0.maxMicros / 1000) }, nil, noActivation))
        rows.append(
            .values(
                "  launch → first answer, p50 (ms)", c.map { f2($0.launchToAnswer.p50Micros / 1000) }, m.map { f2($0.launchToAnswer.p50Micros / 1000) }, missing
            ))
        rows.append(
            .values(
                "  launch → first answer, mean (ms)", c.map { f2($0.launchToAnswer.meanMicros / 1000) }, m.map { f2($0.launchToAnswer.meanMicros / 1000) },
                missing))
        rows.append(
            .values(
                "  launch → first answer, max (ms)", c.map { f2($0.launchToAnswer.maxMicros / 1000) }, m.map { f2($0.launchToAnswer.maxMicros / 1000) }, missing
            ))
        rows.append(.values("  first start, empty state dir (ms)", c?.firstStartMillis.map(f2), m?.firstStartMillis.map(f2), missing))
        return Row.render(rows)
    }

    /// The request path's goals, each against the bare SwiftNIO floor measured in the same run
    /// (and the older ones against MPD).
    func goalRows() -> [GoalRow] {
        let c = cassette, s = settings
        return [
            GoalRow(
                "service.status p50, 1 connection / bare SwiftNIO", cassette: c.sequential?.p50Micros,
                peer: c.floorSequential?.p50Micros, unit: " µs", goal: 1.25, .atMost),
            GoalRow(
                "server CPU per request, no-op (unknown method) / floor", cassette: c.noOpSequentialCost?.cpuMicrosPerRequest,
                peer: c.floorSequentialCost?.cpuMicrosPerRequest, unit: " µs", goal: 1.5, .atMost),
            GoalRow(
                "\(s.connections) connections, requests/s / floor", cassette: c.concurrent?.throughputPerSecond,
                peer: c.floorConcurrent?.throughputPerSecond, unit: "", goal: 0.8, .atLeast, digits: 0),
            GoalRow(
                "\(s.connections) connections, no-op requests/s / floor (the request path without the status)",
                cassette: c.noOpConcurrent?.throughputPerSecond, peer: c.floorConcurrent?.throughputPerSecond, unit: "", goal: nil,
                .atLeast, digits: 0),
            GoalRow(
                "service.status p50, 1 connection / MPD status", cassette: c.sequential?.p50Micros,
                peer: mpd.sequential?.p50Micros, unit: " µs", goal: 1.0, .atMost),
            GoalRow(
                "\(s.connections) connections, requests/s / MPD", cassette: c.concurrent?.throughputPerSecond,
                peer: mpd.concurrent?.throughputPerSecond, unit: "", goal: 1.0, .atLeast, digits: 0),
        ]
    }

    func machineText() -> String {
        let m = machine
        return """
            machine: nproc \(m.nproc), \(m.cpuModel), \(m.memoryTotal) RAM, \(m.os), kernel \(m.kernel)
            build:   cassette binaries \(m.cassetteBuild) (Cassette \(m.cassetteVersion ?? "?")), cassette-bench \(m.benchBuild)
            mpd:     \(m.mpdVersion ?? "?") (protocol \(m.mpdProtocolVersion ?? "?")), null audio output, empty music dir
            """
    }
}

private enum Row {
    case section(String)
    case values(String, String?, String?, String)

    static func render(_ rows: [Row]) -> String {
        let header = ("metric", "cassette", "mpd")
        var w0 = header.0.count, w1 = header.1.count, w2 = header.2.count
        for case .values(let name, let c, let m, let note) in rows {
            w0 = max(w0, name.count)
            w1 = max(w1, (c ?? "error").count)
            w2 = max(w2, (m ?? note).count)
        }
        func pad(_ s: String, _ w: Int) -> String { s + String(repeating: " ", count: max(0, w - s.count)) }
        func lpad(_ s: String, _ w: Int) -> String { String(repeating: " ", count: max(0, w - s.count)) + s }
        var out = [
            pad(header.0, w0) + " | " + lpad(header.1, w1) + " | " + lpad(header.2, w2),
            String(repeating: "-", count: w0) + "-+-" + String(repeating: "-", count: w1) + "-+-" + String(repeating: "-", count: w2),
        ]
        for row in rows {
            switch row {
            case .section(let title): out.append(title)
            case .values(let name, let c, let m, let note):
                out.append(pad(name, w0) + " | " + lpad(c ?? "error", w1) + " | " + lpad(m ?? note, w2))
            }
        }
        return out.joined(separator: "\n")
    }
}

private func f0(_ v: Double) -> String { String(format: "%.0f", v) }
private func f1(_ v: Double) -> String { String(format: "%.1f", v) }
private func f2(_ v: Double) -> String { String(format: "%.2f", v) }
