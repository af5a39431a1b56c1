import Foundation
import GRDB
import Glibc
import TestSupport
import Wire
import XCTest

@testable import StateDB

/// ALSA configuration for a test, through `ALSA_CONFIG_PATH`: the system's alsa.conf (so `null`
/// and the harness's `~/.asoundrc` still resolve) and a second file that does not exist until
/// the test defines PCMs in it, as a device configured after the player started.
struct LateALSAConfig {
    let base: String
    let late: String
    var environment: [String: String] { ["ALSA_CONFIG_PATH": base + ":" + late] }

    init(dir: String) throws {
        base = dir + "/alsa-base.conf"
        late = dir + "/alsa-late.conf"
        try "</usr/share/alsa/alsa.conf>\n".write(toFile: base, atomically: true, encoding: .utf8)
    }

    /// Writes the second file (atomically: a half-written one is never read).
    func define(_ text: String) throws {
        try text.write(toFile: late, atomically: true, encoding: .utf8)
    }

    /// A `file` PCM named `name`, slave `null`, writing raw samples into `path` (a file or a FIFO).
    static func filePCM(_ name: String, into path: String) -> String {
        "pcm.\(name) {\n    type file\n    slave.pcm \"null\"\n    file \"\(path)\"\n    format \"raw\"\n}\n"
    }
}

/// The reading end of a FIFO the player's `file` PCM writes into: counts what arrives, and can
/// go away (close: the writer gets EPIPE), come back, or stop reading while staying open (the
/// writer blocks once the pipe is full).
final class FIFOReader: @unchecked Sendable {
    let path: String
    private let lock = NSLock()
    private var fd: Int32 = -1
    private var reading = true
    private var stopped = false
    private var total = 0
    private var lastArrival: Date?
    /// What arrived since `mark()`, up to `keptLimit` bytes.
    private var kept: [UInt8]?
    private let keptLimit = 256 * 1024

    init(path: String) throws {
        self.path = path
        guard mkfifo(path, 0o600) == 0 else { throw HarnessError("mkfifo \(path): errno \(errno)") }
        open()
        Thread.detachNewThread { [self] in loop() }
    }

    deinit { finish() }

    var bytes: Int { lock.withLock { total } }

    /// Starts keeping what arrives from now on (see `keptBytes`).
    func mark() { lock.withLock { kept = [] } }
    var keptBytes: [UInt8] { lock.withLock { kept ?? [] } }
    var lastArrivalDate: Date? { lock.withLock { lastArrival } }

    /// Opens the reading end (non-blocking, so it never waits for a writer).
    func open() {
        lock.withLock {
            guard fd < 0 else { return }
            fd = Glibc.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            reading = true
        }
    }

    /// The reader dies: its end closes.
    func close() {
        lock.withLock {
            if fd >= 0 { Glibc.close(fd) }
            fd = -1
        }
    }

    /// Stops or resumes reading without closing.
    func setReading(_ value: Bool) { lock.withLock { reading = value } }

    func finish() {
        lock.withLock { stopped = true }
        close()
    }

    private func loop() {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n: Int = lock.withLock {
                guard !stopped, fd >= 0, reading else { return stopped ? -2 : 0 }
                return buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            }
            if n == -2 { return }
            if n > 0 {
                lock.withLock {
                    if var k = kept, k.count < keptLimit {
                        k += buffer[0..<min(n, keptLimit - k.count)]
                        kept = k
                    }
                    total += n
                    lastArrival = Date()
                }
            } else {
                usleep(2_000)
            }
        }
    }
}

extension PlayerHarness {
    /// The play events the player recorded, as stored (`playerPlays.body`), oldest first.
    func recordedPlays() async throws -> [JSONValue] {
        let bodies = try await catalog.pool.read { db in
            try String.fetchAll(db, sql: "SELECT body FROM playerPlays WHERE kind = 'play' ORDER BY rowid")
        }
        return try bodies.map { try JSONCoding.parse(Array($0.utf8)) }
    }

    /// Runs cassettectl against this harness's player.
    func ctl(_ args: [String], environment: [String: String] = [:]) throws -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Binaries.path("cassettectl"))
        process.arguments = args + ["--runtime-dir", dir.runtimeDir]
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        process.environment = env
        let out = dir.path + "/ctl.out", err = dir.path + "/ctl.err"
        FileManager.default.createFile(atPath: out, contents: nil)
        FileManager.default.createFile(atPath: err, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: err))
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return (
            process.terminationStatus, (try? String(contentsOfFile: out, encoding: .utf8)) ?? "",
            (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
        )
    }

    /// Waits until `condition` holds, polling; fails with `what` after `timeout` seconds.
    func waitFor(_ what: String, timeout: Double = 20, _ condition: () async throws -> Bool) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw HarnessError("\(what) did not happen within \(timeout) s")
    }
}

extension NotifyListener {
    /// Collects what arrives for `seconds` and says how many `WATCHDOG=1` pings came in that time.
    func pings(during seconds: Double) -> Int {
        let before = messages.count
        _ = wait(for: "CASSETTE-TEST-NEVER-SENT", timeout: seconds)
        return messages.dropFirst(before).filter { $0.split(separator: "\n").contains("WATCHDOG=1") }.count
    }
}
