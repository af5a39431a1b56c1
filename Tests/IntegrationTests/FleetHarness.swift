import Foundation
import TestSupport
import Wire
import XCTest

/// The three real services in one temporary folder, each started on its own so a test can
/// restart one, give the player another audio device, or start them on a catalog it prepared.
final class FleetStack {
    let dir: TestDirectory
    let origin: OriginProcess?
    let config: String?
    var running: [String: ServiceProcess] = [:]

    init(origin withOrigin: Bool = true, config: String? = nil) throws {
        let dir = try TestDirectory(prefix: "fleet")
        self.dir = dir
        origin = withOrigin ? try OriginProcess.start() : nil
        self.config = try config.map { try dir.writeConfig($0) }
    }

    @discardableResult
    func start(_ name: String, audioDevice: String = "null") throws -> ServiceProcess {
        var args = origin.map { ["--origin", $0.baseURL] } ?? []
        if let config { args += ["--config", config] }
        if name == "player" { args += ["--audio-device", audioDevice, "--audio-pace", "realtime"] }
        let service = try ServiceProcess(
            name, in: dir, extraArgs: args,
            environment: ["CASSETTE_CLIENT_TOKEN": "demo", "CASSETTE_CLIENT_SECRET": "demo"])
        try service.waitReady()
        running[name] = service
        return service
    }

    func startAll() throws {
        for name in ["downloader", "player", "reporter"] { try start(name) }
    }

    /// SIGTERM, and waits for a clean exit.
    func stop(_ name: String) throws {
        guard let service = running.removeValue(forKey: name) else { return }
        service.signal(SIGTERM)
        XCTAssertEqual(try service.waitExit(timeout: 30), 0, service.log.suffix(2000).description)
    }

    func ctl(_ args: [String], timeout: Double = 90) throws -> CommandRun {
        try Command.run(Binaries.path("cassettectl"), args + ["--runtime-dir", dir.runtimeDir], timeout: timeout)
    }

    /// `service.metrics` of one service, parsed by prometheus_client's OpenMetrics parser
    /// (Debian's python3-prometheus-client): each sample as `name{labels}` → value.
    func metrics(_ name: String) throws -> [String: Double] {
        let run = try ctl(["metrics", name])
        XCTAssertEqual(run.status, 0, run.all)
        return try OpenMetricsParser.parse(run.stdout)
    }

    var logs: String {
        running.values.map { "--- \($0.name)\n\($0.log.suffix(3000))" }.joined(separator: "\n")
    }

    func discard() {
        for service in running.values { service.kill9() }
        origin?.discard()
        dir.remove()
    }
}

/// Parses OpenMetrics text with a real parser: prometheus_client's, under Debian's python3
/// (`make deps` installs python3-prometheus-client). A text it rejects throws with its reason.
enum OpenMetricsParser {
    static let script = """
        import json, math, sys
        from prometheus_client.openmetrics.parser import text_string_to_metric_families
        samples = {}
        for family in text_string_to_metric_families(sys.stdin.read()):
            for s in family.samples:
                labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
                # JSON has no infinity: +Inf arrives as 1e308.
                value = s.value if math.isfinite(s.value) else math.copysign(1e308, s.value)
                samples[s.name + ("{" + labels + "}" if labels else "")] = value
        print(json.dumps(samples))
        """

    static func parse(_ text: String) throws -> [String: Double] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", script]
        let input = Pipe(), output = Pipe(), errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        input.fileHandleForWriting.write(Data(text.utf8))
        try input.fileHandleForWriting.close()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw OriginTestError(
                "the OpenMetrics parser refused the text (is python3-prometheus-client installed? make deps): "
                    + String(decoding: err, as: UTF8.self) + "\n" + text)
        }
        guard case .object(let fields)? = try? JSONCoding.parse(Array(out)) else {
            throw OriginTestError("unreadable parser output: \(String(decoding: out, as: UTF8.self))")
        }
        return fields.compactMapValues { $0.doubleValue }
    }
}
