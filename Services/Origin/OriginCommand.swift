import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import Wire

/// `cassette-origin`: the reference content origin of docs/origin.md, for tests and demos.
/// The entry point only parses arguments; `CatalogGenerator` and `HTTPServer` do the work.
@main
struct OriginCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cassette-origin",
        abstract: "Reference content origin for Cassette (demo catalog generator and HTTP server).",
        subcommands: [Generate.self, Serve.self])
}

/// Options shared by both subcommands: what a freshly generated catalog looks like.
struct GenerationOptions: ParsableArguments {
    @Option(help: "Tracks in each offline station.")
    var tracksPerStation: Int = 6

    @Option(help: "Length of the shortest track in seconds; the longest is 2.5 times as long.")
    var seconds: Double = 8

    @Option(help: "Length of the HLS video vid-1 in seconds (2 s segments); default: --seconds within 4…8.")
    var videoSeconds: Double?

    @Option(
        name: .customLong("synthetic"),
        help: ArgumentHelp(
            "A synthetic offline station ID=COUNTxSIZE (SIZE in bytes, or with k/m/g), e.g. st-bench=1000x200k; repeatable. The catalog then holds only synthetic stations of random bytes and needs no ffmpeg.",
            valueName: "spec"))
    var synthetic: [SyntheticStationSpec] = []

    func validate() throws {
        guard (1...99).contains(tracksPerStation) else { throw ValidationError("--tracks-per-station must be 1…99") }
        guard seconds >= 1, seconds <= 600 else { throw ValidationError("--seconds must be 1…600") }
        if let videoSeconds, !(4...3_600).contains(videoSeconds) { throw ValidationError("--video-seconds must be 4…3600") }
        guard Set(synthetic.map(\.id)).count == synthetic.count else { throw ValidationError("--synthetic station ids must differ") }
    }

    var parameters: GenerationParameters {
        GenerationParameters(
            tracksPerStation: tracksPerStation, seconds: seconds, synthetic: synthetic.isEmpty ? nil : synthetic,
            videoSeconds: videoSeconds)
    }
}

struct Generate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Build the demo catalog in DIR with ffmpeg (does nothing if DIR/catalog.json is complete).")

    @Option(help: "StateDB directory; media goes to DIR/media and DIR/img.")
    var out: String

    @OptionGroup var generation: GenerationOptions

    func run() throws {
        let directory = URL(fileURLWithPath: out)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let catalog = try CatalogGenerator(directory: directory, parameters: generation.parameters, log: logLine).ensure()
        logLine("catalog: \(catalog.tracks.count) tracks, \(catalog.products.count) products, \(catalog.files.count) files")
    }
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the catalog in DIR over HTTP/1.1, generating it first if it is missing.")

    @Option(help: "Data directory: catalog, media and the play logs.")
    var data: String

    @Option(help: "Address to listen on.")
    var host: String = "127.0.0.1"

    @Option(help: "Port to listen on; 0 picks a free one.")
    var port: Int = 0

    @Option(help: "Write the chosen port here (atomically) once listening.")
    var portFile: String?

    @Option(help: "Seconds between streaming-session heartbeats the origin asks of clients.")
    var heartbeatSeconds: Int = OriginLimits.defaultHeartbeatSeconds

    @Option(
        help: ArgumentHelp(
            "Faults queued before the first request, as POST /_control/faults takes them: {\"path\":\"/v1/plays\",\"faults\":[…]}.",
            discussion: "For tests whose client may reach the origin the moment it listens."))
    var faults: String?

    @OptionGroup var generation: GenerationOptions

    func validate() throws {
        guard (1...3_600).contains(heartbeatSeconds) else { throw ValidationError("--heartbeat-seconds must be 1…3600") }
        if faults != nil { _ = try startupFaults() }
    }

    /// `--faults` parsed: the path prefix and its faults.
    func startupFaults() throws -> (path: String, faults: [Fault])? {
        guard let faults else { return nil }
        let value: JSONValue
        do { value = try JSONValue.parse(Array(faults.utf8)) } catch { throw ValidationError("--faults is not JSON: \(error)") }
        guard let path = value["path"]?.stringValue, path.hasPrefix("/"), let list = value["faults"]?.arrayValue else {
            throw ValidationError("--faults must be {\"path\":\"/…\",\"faults\":[…]}")
        }
        do { return (path, try list.map { try Fault(json: $0) }) } catch let error as FaultError {
            throw ValidationError("--faults: \(error.message)")
        }
    }

    func run() async throws {
        let directory = URL(fileURLWithPath: data)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let catalog = try CatalogGenerator(directory: directory, parameters: generation.parameters, log: logLine).ensure()
        let environment = ProcessInfo.processInfo.environment
        let origin = try Origin(
            dataDirectory: directory, catalog: catalog,
            token: environment["CASSETTE_CLIENT_TOKEN"] ?? OriginLimits.defaultClientToken,
            secret: environment["CASSETTE_CLIENT_SECRET"] ?? OriginLimits.defaultClientSecret,
            heartbeatSeconds: heartbeatSeconds)
        if let (path, queued) = try startupFaults() { origin.faults.enqueue(prefix: path, faults: queued) }
        let host = self.host
        let portFile = self.portFile
        let server = HTTPServer(host: host, port: port, origin: origin) { boundPort in
            if let portFile { try writeAtomically("\(boundPort)\n", to: portFile) }
            // Unbuffered, so a parent reading our stdout through a pipe sees the line at once.
            FileHandle.standardOutput.write(Data("cassette-origin listening on http://\(host):\(boundPort)\n".utf8))
        }
        // The group waits until its SIGTERM/SIGINT sources are registered before it starts
        // the server, and the server writes the port file and the "listening" line only once
        // it runs: whoever waits for either can rely on SIGTERM ending the process with
        // status 0. A signal during catalog generation, before that, has its default effect.
        let group = ServiceGroup(
            services: [server], gracefulShutdownSignals: [.sigterm, .sigint],
            logger: Logger(label: "cassette-origin") { StreamLogHandler.standardError(label: $0) })
        try await group.run()
    }
}

/// Writes through a temporary file and a rename, so a reader polling `path` never sees a
/// partial port number.
func writeAtomically(_ text: String, to path: String) throws {
    let temporary = path + ".tmp.\(getpid())"
    try text.write(toFile: temporary, atomically: false, encoding: .utf8)
    guard rename(temporary, path) == 0 else { throw OriginError(description: "cannot rename to \(path): errno \(errno)") }
}

/// Progress and diagnostics go to stderr so stdout carries only the "listening" line.
@Sendable func logLine(_ text: String) {
    FileHandle.standardError.write(Data("cassette-origin: \(text)\n".utf8))
}
