import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The download benchmark's peers: curl and aria2c as command-line tools, each timed from
/// launch to exit, writing to the same disk as Cassette. Neither verifies a checksum nor
/// fsyncs what it wrote (the report says so), except the peers that add those steps after them.
enum DownloadPeers {
    /// `curl -sS --fail -o FILE URL`: one file, one connection.
    static func curlOne(url: String, to file: String, log: String, pin: CPUPin = .none) throws -> Run {
        try timedRun("/usr/bin/curl", ["-sS", "--fail", "-o", file, url], log: log, pin: pin)
    }

    /// The same, then `sync FILE` (coreutils: fsync of that file), for a durable comparison.
    static func curlOneThenFsync(url: String, to file: String, log: String, pin: CPUPin = .none) throws -> Run {
        let begin = monotonicNanos()
        let fetched = try timedRun("/usr/bin/curl", ["-sS", "--fail", "-o", file, url], log: log, pin: pin)
        let synced = try timedRun("/usr/bin/sync", [file], log: log, pin: pin)
        return Run(seconds: Double(monotonicNanos() - begin) / 1e9, cpuSeconds: fetched.cpuSeconds + synced.cpuSeconds)
    }

    /// The same, then `openssl dgst -sha256 FILE`: what receiving and verifying the bytes costs
    /// with standard tools (the floor of a client that hashes what it receives), no fsync.
    static func curlOneThenHash(url: String, to file: String, log: String, pin: CPUPin = .none) throws -> Run {
        let begin = monotonicNanos()
        let fetched = try timedRun("/usr/bin/curl", ["-sS", "--fail", "-o", file, url], log: log, pin: pin)
        let hashed = try timedRun("/usr/bin/openssl", ["dgst", "-sha256", "-r", file], log: log, pin: pin)
        return Run(seconds: Double(monotonicNanos() - begin) / 1e9, cpuSeconds: fetched.cpuSeconds + hashed.cpuSeconds)
    }

    /// `curl --parallel --parallel-max 8 -K LIST`, the list naming every URL and its output.
    static func curlParallel(
        urls: [(url: String, name: String)], into folder: String, parallel: Int, log: String, pin: CPUPin = .none
    ) throws -> Run {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let list = folder + ".curl-config"
        let text = urls.map { "url = \"\($0.url)\"\noutput = \"\(folder)/\($0.name)\"\n" }.joined()
        try text.write(toFile: list, atomically: true, encoding: .utf8)
        return try timedRun("/usr/bin/curl", ["-sS", "--fail", "--parallel", "--parallel-max", "\(parallel)", "-K", list], log: log, pin: pin)
    }

    /// The same, then `sync -f` (one `syncfs`): every file durable, none checked.
    static func curlParallelThenSync(
        urls: [(url: String, name: String)], into folder: String, parallel: Int, log: String, pin: CPUPin = .none
    ) throws -> Run {
        let begin = monotonicNanos()
        let fetched = try curlParallel(urls: urls, into: folder, parallel: parallel, log: log, pin: pin)
        let synced = try timedRun("/usr/bin/sync", ["-f", folder], log: log, pin: pin)
        return Run(seconds: Double(monotonicNanos() - begin) / 1e9, cpuSeconds: fetched.cpuSeconds + synced.cpuSeconds)
    }

    /// The same work as Cassette's with standard tools, one after the other: `curl --parallel`,
    /// then `openssl dgst -sha256` over every file (SHA-NI, like Cassette's BoringSSL), each digest
    /// checked against the manifest's, then `sync -f` (one `syncfs` of the file system: the
    /// cheapest way to make all of them durable at once, though it flushes every other program's
    /// dirty data too, which is why Cassette fsyncs its own files instead).
    ///
    /// `fsyncEach`: Cassette's durability instead of one `syncfs`: `sync FILE… FOLDER` (an fsync
    /// of every file, one after the other, then of the folder).
    static func curlParallelThenVerify(
        urls: [(url: String, name: String, sha256: String)], into folder: String,
        parallel: Int, log: String, pin: CPUPin = .none, fsyncEach: Bool = false
    ) throws -> Run {
        let begin = monotonicNanos()
        let fetched = try curlParallel(urls: urls.map { ($0.url, $0.name) }, into: folder, parallel: parallel, log: log, pin: pin)
        let digests = folder + ".sha256"
        try? FileManager.default.removeItem(atPath: digests)
        let hashed = try timedRun("/usr/bin/openssl", ["dgst", "-sha256", "-r"] + urls.map { folder + "/" + $0.name }, log: digests, pin: pin)
        let found = try String(contentsOfFile: digests, encoding: .utf8).split(separator: "\n").reduce(into: [String: String]()) { found, line in
            // "HEX *PATH"
            let parts = line.split(separator: " ", maxSplits: 1)
            if parts.count == 2 { found[String(parts[1].dropFirst())] = String(parts[0]) }
        }
        for item in urls where found[folder + "/" + item.name] != item.sha256 {
            throw BenchError("openssl: \(folder)/\(item.name) does not match the manifest's sha256; see \(digests)")
        }
        let durable = fsyncEach ? urls.map { folder + "/" + $0.name } + [folder] : ["-f", folder]
        let synced = try timedRun("/usr/bin/sync", durable, log: log, pin: pin)
        return Run(
            seconds: Double(monotonicNanos() - begin) / 1e9,
            cpuSeconds: fetched.cpuSeconds + hashed.cpuSeconds + synced.cpuSeconds)
    }

    /// `aria2c -j8 -i LIST -d FOLDER`, quiet, with its defaults otherwise (file allocation
    /// `prealloc`, no checksum since the list gives none).
    static func aria2c(
        _ binary: String, urls: [(url: String, name: String)], into folder: String, parallel: Int, log: String, pin: CPUPin = .none
    ) throws -> Run {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let list = folder + ".aria2-input"
        let text = urls.map { "\($0.url)\n  out=\($0.name)\n" }.joined()
        try text.write(toFile: list, atomically: true, encoding: .utf8)
        return try timedRun(binary, ["-q", "-j\(parallel)", "-i", list, "-d", folder], log: log, pin: pin)
    }

    /// One timed run: wall time, and the CPU time (user + system) of the peer's process.
    struct Run {
        var seconds: Double
        var cpuSeconds: Double
    }

    /// Runs a tool to its end; returns the wall time in seconds, throws unless it exits 0.
    static func timed(_ executable: String, _ arguments: [String], log: String) throws -> Double {
        try timedRun(executable, arguments, log: log).seconds
    }

    /// The same, with the tool's CPU time (`wait4`'s rusage), on the cores `pin` names.
    static func timedRun(_ executable: String, _ arguments: [String], log: String, pin: CPUPin = .none) throws -> Run {
        let begin = monotonicNanos()
        let command = pin.command(executable, arguments)
        let child = try ChildProcesses.shared.launch(command.executable, command.arguments, logFile: log)
        var status: Int32 = 0
        var usage = rusage()
        while wait4(child.pid, &status, 0, &usage) < 0 {
            guard errno == EINTR else { throw BenchError.system("wait4 \(executable)") }
        }
        let seconds = Double(monotonicNanos() - begin) / 1e9
        let cpu =
            Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        ChildProcesses.shared.stop(child)
        let exited = status & 0x7f == 0
        let code = (status >> 8) & 0xff
        guard exited, code == 0 else {
            throw BenchError("\(executable) \(arguments.prefix(3).joined(separator: " ")) … failed (status \(status)); see \(log)")
        }
        return Run(seconds: seconds, cpuSeconds: cpu)
    }

    /// Checks that `folder` holds exactly `names` with `size` bytes each (a peer that failed
    /// quietly must not look fast).
    static func verify(folder: String, names: [String], size: Int64) throws {
        for name in names {
            let path = folder + "/" + name
            var info = stat()
            guard stat(path, &info) == 0, Int64(info.st_size) == size else {
                throw BenchError("\(path) is missing or not \(size) bytes")
            }
        }
    }
}
