import Foundation
import Wire

#if canImport(Glibc)
    import Glibc
#endif

/// The local media server against nginx and the SwiftNIO floor: time to the first byte of the
/// master playlist and ffmpeg's time to the first decoded frame, over the same bytes and paths.
extension HLSBench {
    /// The serving run over the last round's state: the player's media server, then nginx with
    /// the same bytes under the same paths.
    func serve(state: String, root: String) async throws -> [String] {
        let runtime = root + "/prun", config = root + "/player.json"
        try #"{"logLevel":"warning"}"#.write(toFile: config, atomically: true, encoding: .utf8)
        let player = try ChildProcesses.shared.launch(
            binDir + "/player",
            [
                "--runtime-dir", runtime, "--state-dir", state, "--config", config,
                "--audio-device", "null", "--audio-pace", "realtime",
            ],
            logFile: root + "/player.log")
        defer { ChildProcesses.shared.stop(player) }
        let client = try await connectWhenListening(runtime + "/player.sock", child: player, name: "player", seconds: 30)
        defer { Task { await client.close() } }
        guard let base = try await client.call("media.server.start")["url"]?.stringValue else { throw BenchError("media.server.start gave no url") }
        let log = root + "/serve.log"

        // nginx's root: the server's answers, byte for byte, under the same paths.
        let web = root + "/web"
        let names = try served(base: base, log: log)
        for name in names {
            let target = web + "/p/vid-1/" + name
            try FileManager.default.createDirectory(atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            _ = try DownloadPeers.timed("/usr/bin/curl", ["-sS", "--fail", "-o", target, base + "/p/vid-1/" + name], log: log)
        }
        let nginxBase = try startNginx(web: web, folder: root + "/nginx")
        let entry = "/p/vid-1/master.m3u8"
        let (floor, floorBase) = try startFloor(body: web + entry, folder: root)
        defer { ChildProcesses.shared.stop(floor) }

        var ttfb: [String: [Double]] = [:], frame: [String: [Double]] = [:]
        for _ in 1...ttfbRequests {
            for (server, url) in [("cassette", base), ("nginx", nginxBase), ("floor", floorBase)] {
                ttfb[server, default: []].append(try startTransfer(url + entry, log: log))
            }
        }
        for _ in 1...serveRounds {
            for (server, url) in [("cassette", base), ("nginx", nginxBase)] {
                frame[server, default: []].append(
                    try DownloadPeers.timed(
                        "/usr/bin/ffmpeg",
                        [
                            "-nostdin", "-v", "error", "-i", url + entry,
                            "-map", "0:v:0", "-frames:v", "1", "-f", "null", "-",
                        ],
                        log: log))
            }
        }
        let median = { (values: [Double]) in values.sorted()[values.count / 2] * 1_000 }
        let first = (cassette: median(ttfb["cassette"]!), nginx: median(ttfb["nginx"]!), floor: median(ttfb["floor"]!))
        return [
            "Local media server against nginx (same bytes, same paths; medians of \(ttfbRequests) requests, \(serveRounds) decodes):",
            String(
                format: "  master playlist, time to first byte   cassette %6.3f ms   nginx %6.3f ms   ratio %5.2f×   goal ≤ 1.50×",
                first.cassette, first.nginx, first.cassette / first.nginx),
            String(
                format: "  the same from memory, bare SwiftNIO (floor)  %6.3f ms   floor / nginx %5.2f×   cassette / floor %5.2f×",
                first.floor, first.floor / first.nginx, first.cassette / first.floor),
            String(format: "  ffmpeg to the first decoded frame     cassette %6.1f ms   nginx %6.1f ms", median(frame["cassette"]!), median(frame["nginx"]!)),
        ]
    }

    /// Every path the server answers for vid-1: the master, the playlists it names, their
    /// segments and keys (read from the rewritten playlists).
    func served(base: String, log: String) throws -> [String] {
        var names = ["master.m3u8"]
        var index = 0
        while index < names.count {
            let name = names[index]
            index += 1
            guard name.hasSuffix(".m3u8") else { continue }
            let text = try curlText([base + "/p/vid-1/" + name], log: log)
            var references: [String] = []
            for line in text.split(separator: "\n") {
                if line.hasPrefix("#") {
                    if let start = line.range(of: "URI=\"") {
                        let rest = line[start.upperBound...]
                        if let close = rest.firstIndex(of: "\"") { references.append(String(rest[..<close])) }
                    }
                } else if !line.isEmpty {
                    references.append(String(line))
                }
            }
            for reference in references where reference.hasPrefix("/p/vid-1/") {
                let relative = String(reference.dropFirst("/p/vid-1/".count))
                if !names.contains(relative) { names.append(relative) }
            }
        }
        return names
    }

    func startNginx(web: String, folder: String) throws -> String {
        try DownloadServers.startNginx(
            nginx, folder: folder,
            types: "types { application/vnd.apple.mpegurl m3u8; video/mp2t ts; text/vtt vtt; }",
            server: { port in "listen 127.0.0.1:\(port);\nroot \(web);" }
        ).base
    }

    /// Starts this binary's `http-floor` answering every request with the bytes of `body`.
    func startFloor(body: String, folder: String) throws -> (Child, String) {
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let portFile = folder + "/http-floor.port"
        let child = try ChildProcesses.shared.launch(
            executable, ["http-floor", "--body", body, "--port-file", portFile],
            logFile: folder + "/http-floor.log")
        let until = deadline(after: 30)
        while true {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8), let port = UInt16(text), DownloadServers.canConnect(port: port) {
                return (child, "http://127.0.0.1:\(port)")
            }
            guard monotonicNanos() < until else { throw BenchError("http-floor did not listen; see \(folder)/http-floor.log") }
            sleepMicros(10_000)
        }
    }

    /// `curl -w %{time_starttransfer}`: seconds until the first byte of the answer.
    func startTransfer(_ url: String, log: String) throws -> Double {
        let text = try curlText(["-o", "/dev/null", "-w", "%{time_starttransfer}", url], log: log)
        guard let seconds = Double(text.trimmingCharacters(in: .whitespacesAndNewlines)) else { throw BenchError("curl -w gave \(text)") }
        return seconds
    }
}
