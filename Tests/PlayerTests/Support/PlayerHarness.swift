import Foundation
import GRDB
import MediaDecoder
import TestSupport
import Wire
import XCTest

@testable import StateDB

/// A real player binary in a temporary folder, playing into an ALSA `file` PCM (slave `null`,
/// raw samples) declared in a private `.asoundrc` (HOME points at the test folder), with the
/// catalog rows and media files a downloader would have written (docs/catalog.md).
final class PlayerHarness {
    let dir: TestDirectory
    let capturePath: String
    var mediaDir: String { dir.stateDir + "/media" }
    private(set) var catalog: StateDB!
    var player: ServiceProcess?
    var client: RPCClient?
    /// The tmpfs holding the state directory, when the test asked for a small one.
    private(set) var stateDisk: SmallDisk?

    /// - Parameters:
    ///   - captureEveryOpen: each opening of the PCM writes a file of its own
    ///     (`capture.raw`, `capture.raw.0001`, … see `captures`) instead of starting the one again.
    ///   - stateDiskKilobytes: put the state directory (the catalog) on a tmpfs of that size; the
    ///     media folder then lives outside it (a symlink), so that filling the disk affects the catalog only.
    init(captureEveryOpen: Bool = false, stateDiskKilobytes: Int? = nil) throws {
        dir = try TestDirectory(prefix: "cpl")
        capturePath = dir.path + "/capture.raw"
        if let stateDiskKilobytes {
            stateDisk = try SmallDisk(at: dir.stateDir, kilobytes: stateDiskKilobytes)
            try FileManager.default.createDirectory(atPath: dir.path + "/media", withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: mediaDir, withDestinationPath: dir.path + "/media")
        }
        try FileManager.default.createDirectory(atPath: mediaDir + "/tracks", withIntermediateDirectories: true)
        let asoundrc = """
            pcm.cassette_capture {
                type file
                slave.pcm "null"
                file "\(capturePath)"
                format "raw"
                truncate \(captureEveryOpen ? "false" : "true")
            }
            """
        try asoundrc.write(toFile: dir.path + "/.asoundrc", atomically: true, encoding: .utf8)
        catalog = try StateDB(stateDirectory: dir.stateDir)
    }

    deinit {
        player?.kill9()
        catalog = nil
        stateDisk?.unmount()
        dir.remove()
    }

    // MARK: Content

    /// Makes a track with ffmpeg (a tone; `frequency` tells tracks apart) under media/tracks/.
    @discardableResult
    func makeTrack(_ id: String, seconds: Double = 2, frequency: Int = 440, ext: String = "flac") throws -> String {
        let relative = "tracks/\(id).\(ext)"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y", "-f", "lavfi",
            "-i", "sine=frequency=\(frequency):duration=\(seconds):sample_rate=44100", "-ac", "2",
            "-sample_fmt", "s16", mediaDir + "/" + relative,
        ]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw XCTSkip("ffmpeg could not make \(relative)") }
        return relative
    }

    /// StateDB rows for an offlined product (offline.add reached `cached`) whose file is `relative`.
    func addProduct(_ id: String, file relative: String, state: String = "verified", seconds: Double = 2) throws {
        try catalog.pool.write { db in
            let fileId = try Self.insertFile(db, relative, state: state)
            try Self.insertItem(db, id, fileId: fileId, seconds: seconds)
            try db.execute(
                sql: """
                    INSERT INTO offlineProducts (token, requestedProductId, productId, state, offlineValidUntil, requestedAt)
                    VALUES (?, ?, ?, 'cached', ?, ?)
                    """, arguments: ["tok-\(id)", id, id, Date().addingTimeInterval(86_400), Date()])
        }
    }

    /// An offline station whose items are `items` (id, relative file, file state), in that order.
    func addStation(_ id: String, name: String, items: [(String, String, String)]) throws {
        try catalog.pool.write { db in
            try db.execute(
                sql: "INSERT INTO stations (id, name, expiresAt, createdAt) VALUES (?, ?, ?, ?)",
                arguments: [id, name, Date().addingTimeInterval(86_400), Date()])
            for (position, item) in items.enumerated() {
                let fileId = try Self.insertFile(db, item.1, state: item.2)
                try Self.insertItem(db, item.0, fileId: fileId, seconds: 2)
                try db.execute(
                    sql: "INSERT INTO stationItems (stationId, itemId, position) VALUES (?, ?, ?)",
                    arguments: [id, item.0, position])
            }
        }
    }

    private static func insertFile(_ db: Database, _ relative: String, state: String) throws -> Int64 {
        try db.execute(
            sql: """
                INSERT INTO files (urlPath, localPath, mimeType, state, createdAt, completedAt) VALUES (?, ?, 'audio/flac', ?, ?, ?)
                """, arguments: ["/media/" + relative, relative, state, Date(), Date()])
        return db.lastInsertedRowID
    }

    private static func insertItem(_ db: Database, _ id: String, fileId: Int64, seconds: Double) throws {
        try db.execute(
            sql: """
                INSERT INTO mediaItems (id, title, durationSeconds, audioQuality, codec, sampleRate, bitDepth, fileId)
                VALUES (?, ?, ?, 'LOSSLESS', 'flac', 44100, 16, ?)
                """, arguments: [id, "Title \(id)", seconds, fileId])
    }

    /// The track decoded the way the player decodes it (16-bit, source rate and channels).
    func decoded(_ relative: String, from position: Double = 0) throws -> [UInt8] {
        let decoder = try AudioDecoder(path: mediaDir + "/" + relative, output: DecoderOutputFormat(sampleFormat: .s16))
        if position > 0 { try decoder.seek(to: position) }
        var bytes: [UInt8] = []
        while let chunk = try decoder.nextChunk() { bytes += chunk.samples }
        return bytes
    }

    var captured: [UInt8] { (try? [UInt8](Data(contentsOf: URL(fileURLWithPath: capturePath)))) ?? [] }

    /// With `captureEveryOpen`: what each opening of the PCM got, in order.
    var captures: [[UInt8]] {
        var all: [[UInt8]] = []
        while true {
            let path = all.isEmpty ? capturePath : capturePath + String(format: ".%04d", all.count)
            guard let data = FileManager.default.contents(atPath: path) else { return all }
            all.append([UInt8](data))
        }
    }

    // MARK: The downloader

    /// The reference origin's demo credentials, as the services read them from the environment.
    static let originCredentials = ["CASSETTE_CLIENT_TOKEN": "demo", "CASSETTE_CLIENT_SECRET": "demo"]

    /// A real downloader on this harness's state directory, talking to `origin`, once ready.
    func startDownloader(origin: OriginProcess) throws -> ServiceProcess {
        let downloader = try ServiceProcess(
            "downloader", in: dir, extraArgs: ["--origin", origin.baseURL],
            environment: Self.originCredentials)
        try downloader.waitReady()
        return downloader
    }

    // MARK: The player

    /// Starts the player on the capture PCM and subscribes to `player` events.
    @discardableResult
    /// `cpus`: run the player on these CPUs only (`taskset -c`), e.g. "0" for a one-core device.
    /// `device`: the ALSA PCM to play into (the capture PCM unless a test defines its own).
    func start(
        pace: String = "device", config: String? = nil, extraArgs: [String] = [],
        environment: [String: String] = [:], cpus: String? = nil,
        device: String = "cassette_capture"
    ) async throws -> RPCClient {
        var args = ["--audio-device", device, "--audio-pace", pace] + extraArgs
        if let config { args += ["--config", try dir.writeConfig(config)] }
        var env = ["HOME": dir.path]
        for (k, v) in environment { env[k] = v }
        let process = try ServiceProcess(
            "player", in: dir, launch: cpus.map { .pinned(cpus: $0) } ?? .selfBound,
            extraArgs: args, environment: env)
        try process.waitReady()
        player = process
        let client = try await process.client()
        _ = try await client.call("events.subscribe", ["topics": ["player"]])
        self.client = client
        return client
    }

    func stop() async {
        await client?.close()
        client = nil
        player?.signal(SIGTERM)
        _ = try? player?.waitExit()
        player = nil
    }

    func call(_ method: String, _ params: JSONValue = .object([:])) async throws -> JSONValue {
        try await client!.call(method, params, timeout: .seconds(10))
    }

    func status() async throws -> JSONValue { try await call("player.status") }

    static func product(_ id: String) -> JSONValue {
        ["mediaProduct": ["productId": .string(id), "productType": "TRACK", "referenceId": .string("ref-\(id)")]]
    }
}

/// Reads the `player` events of one connection in order: a task drains the stream into a
/// list that `until` reads from (cancelling a waiter would end an AsyncStream for good).
final class EventLog: @unchecked Sendable {
    private let events: EventCollector
    private let lock = NSLock()
    private var read = 0

    init(_ client: RPCClient) {
        events = EventCollector(client)
    }

    /// Collects events until one satisfies `stop` (returned, included in the list), or fails after `timeout`.
    func until(timeout: Double = 15, _ stop: @escaping (RPCEvent) -> Bool) async throws -> [RPCEvent] {
        let from = lock.withLock { read }
        do {
            let position = try await events.waitPosition("matching", from: from, timeout: timeout, stop)
            lock.withLock { read = position + 1 }
            return Array(events.all[from...position])
        } catch {
            let seen = events.all.dropFirst(from).map(Self.describe)
            throw HarnessError("no matching event within \(timeout) s; got \(seen)")
        }
    }

    /// The events that arrived since the last read, without waiting for more.
    func sinceLastRead() -> [RPCEvent] {
        let all = events.all
        let from = lock.withLock { () -> Int in
            defer { read = max(read, all.count) }
            return read
        }
        return Array(all.dropFirst(from))
    }

    /// Waits for `PlaybackStateChanged` to `state`.
    func untilState(_ state: String, timeout: Double = 15) async throws -> [RPCEvent] {
        try await until(timeout: timeout) { $0.type == "PlaybackStateChanged" && $0.data["playbackState"]?.stringValue == state }
    }

    /// "PlaybackStateChanged:PLAYING", "MediaProductTransition:a>b", or the type alone.
    static func describe(_ event: RPCEvent) -> String {
        switch event.type {
        case "PlaybackStateChanged":
            return "State:" + (event.data["playbackState"]?.stringValue ?? "?")
        case "MediaProductTransition":
            let from = event.data["previousMediaProduct"]?["productId"]?.stringValue ?? "-"
            let to = event.data["activeMediaProduct"]?["productId"]?.stringValue ?? "-"
            return "Transition:\(from)>\(to)"
        default:
            return event.type
        }
    }
}
