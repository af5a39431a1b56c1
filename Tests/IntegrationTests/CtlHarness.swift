import Foundation
import TestSupport
import Wire
import XCTest

/// A reference origin and the three real services in one temporary folder, for the tests that
/// drive them the way an operator or app does: through cassettectl and the Python example.
final class CassetteStack {
    let dir: TestDirectory
    let origin: OriginProcess
    var downloader: ServiceProcess!
    var player: ServiceProcess!
    var reporter: ServiceProcess!

    init() throws {
        dir = try TestDirectory(prefix: "ctl")
        origin = try OriginProcess.start()
        let args = ["--origin", origin.baseURL]
        let env = ["CASSETTE_CLIENT_TOKEN": "demo", "CASSETTE_CLIENT_SECRET": "demo"]
        downloader = try ServiceProcess("downloader", in: dir, extraArgs: args, environment: env)
        player = try ServiceProcess(
            "player", in: dir, extraArgs: args + ["--audio-device", "null", "--audio-pace", "realtime"],
            environment: env)
        reporter = try ServiceProcess("reporter", in: dir, extraArgs: args, environment: env)
        for service in [downloader!, player!, reporter!] { try service.waitReady() }
    }

    var api: OriginAPI { OriginAPI(origin: origin) }

    /// The services' logs, for a failure message.
    var logs: String {
        [downloader, player, reporter].compactMap { $0 }.map { "--- \($0.name)\n\($0.log.suffix(3000))" }.joined(separator: "\n")
    }

    func stop() {
        for service in [downloader, player, reporter] { service?.kill9() }
        origin.discard()
        dir.remove()
    }
}

/// One finished command: its exit status and what it printed.
struct CommandRun {
    var status: Int32
    var stdout: String
    var stderr: String

    var json: JSONValue? { try? JSONCoding.parse(Array(stdout.utf8)) }
    /// Everything it printed, stdout then stderr: for tools whose every line counts.
    var output: String { stdout + stderr }
    var all: String { "exit \(status)\nstdout:\n\(stdout)\nstderr:\n\(stderr)" }
}

enum Command {
    /// Runs `executable` with stdout and stderr on pipes (never a terminal) and waits.
    static func run(
        _ executable: String, _ args: [String], environment: [String: String] = [:],
        timeout: Double = 90
    ) throws -> CommandRun {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = args
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        process.environment = env
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Read both pipes while the process runs so a chatty one never blocks on a full pipe.
        let collected = Collected()
        let group = DispatchGroup()
        for (pipe, isOut) in [(out, true), (err, false)] {
            group.enter()
            DispatchQueue.global().async {
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                collected.set(data, stdout: isOut)
                group.leave()
            }
        }
        if group.wait(timeout: .now() + timeout) == .timedOut {
            process.terminate()
            group.wait()
        }
        process.waitUntilExit()
        return CommandRun(status: process.terminationStatus, stdout: collected.text(stdout: true), stderr: collected.text(stdout: false))
    }

    static func ctl(_ stack: CassetteStack, _ args: [String], timeout: Double = 90) throws -> CommandRun {
        try run(Binaries.path("cassettectl"), args + ["--runtime-dir", stack.dir.runtimeDir], timeout: timeout)
    }

    /// The repository's root, found from this file's path.
    static var repository: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }
}

/// A `cassettectl watch …` left running while the test causes events: started, then waited
/// for until `service` counts it as a subscriber.
struct WatchRun {
    let process = Process()
    private let out = Pipe()

    init(_ stack: CassetteStack, _ args: [String], subscribedTo service: String) throws {
        process.executableURL = URL(fileURLWithPath: Binaries.path("cassettectl"))
        process.arguments = ["watch"] + args + ["--runtime-dir", stack.dir.runtimeDir]
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let status = try Command.ctl(stack, ["call", service, "service.status"])
            if status.json?["subscribers"]?.intValue == 1 { break }
            usleep(50_000)
        }
    }

    /// Everything it printed, once it has exited; then its exit status.
    func finish() -> (text: String, status: Int32) {
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (text, process.terminationStatus)
    }
}

private final class Collected: @unchecked Sendable {
    private let lock = NSLock()
    private var out = Data(), err = Data()
    func set(_ data: Data, stdout: Bool) {
        lock.lock()
        defer { lock.unlock() }
        if stdout { out = data } else { err = data }
    }
    func text(stdout: Bool) -> String {
        lock.lock()
        defer { lock.unlock() }
        return String(decoding: stdout ? out : err, as: UTF8.self)
    }
}
