import Foundation
import Synchronization

/// Builds the demo catalog in a directory with the ffmpeg CLI and records what it measured
/// (durations, ReplayGain, sizes, SHA-256) in `catalog.json`.
///
/// Generation is idempotent: a complete catalog whose files are all present is left alone,
/// so `serve` can call `ensure()` on every start and tests can share one generated folder.
struct CatalogGenerator {
    let directory: URL
    let parameters: GenerationParameters
    /// Progress lines go here (stderr for the CLI); nil keeps generation quiet.
    var log: (@Sendable (String) -> Void)?

    /// Returns the existing complete catalog, or generates a new one.
    func ensure() throws -> StateDB {
        if let existing = StateDB.loadComplete(from: directory) { return existing }
        return try generate()
    }

    /// Generates every file and writes `catalog.json` last; throws `OriginError` when
    /// ffmpeg is missing or fails.
    func generate() throws -> StateDB {
        if let synthetic = parameters.synthetic, !synthetic.isEmpty {
            return try SyntheticCatalog(directory: directory, parameters: parameters, log: log).generate()
        }
        let started = Date()
        let manager = FileManager.default
        for folder in ["media", "img"] {
            try manager.createDirectory(at: directory.appendingPathComponent(folder), withIntermediateDirectories: true)
        }
        let stationTracks = DemoLineup.stationTracks(parameters)
        let singles = DemoLineup.singles(parameters)
        let plans = DemoLineup.stations.flatMap { stationTracks[$0.id] ?? [] } + singles
        let video = HLSGenerator(directory: directory, seconds: parameters.videoSeconds ?? max(4, min(parameters.seconds, 8)))
        let hlsTracks = [("tr-hls", 7), ("tr-hls-2", 11)].map { id, seed in
            HLSAudioGenerator(directory: self.directory, productId: id, seed: seed, seconds: max(4, min(parameters.seconds, 8)))
        }

        // Phase 1: synthesise every file.
        var jobs: [@Sendable () throws -> Void] = plans.map { plan in { try self.encode(plan) } }
        jobs += imageJobs()
        jobs += try video.jobs()
        for track in hlsTracks { jobs += try track.jobs() }
        try runParallel(jobs)
        let hls = try video.finish()
        let audioHLS = try hlsTracks.map { ($0.productId, try $0.finish()) }
        log?("generated \(jobs.count) files in \(elapsed(since: started))")

        // Phase 2: measure tracks and albums from the encoded files, as a client would hear them.
        let directory = self.directory
        let path: @Sendable (TrackPlan) -> String = { directory.appendingPathComponent($0.file).path }
        let trackMeasures = Mutex<[String: (duration: Double, gain: Double, peak: Double)]>([:])
        var albums: [String: [TrackPlan]] = [:]
        for plan in plans { albums[plan.album, default: []].append(plan) }
        let albumMeasures = Mutex<[String: (gain: Double, peak: Double)]>([:])
        let albumList = Array(albums)
        // Jobs 0..<plans.count measure a track each, the rest an album each.
        try runParallel(count: plans.count + albumList.count) { index in
            if index < plans.count {
                let plan = plans[index]
                let duration = try FFmpeg.duration(of: path(plan))
                let measured = try FFmpeg.replayGain(of: [path(plan)])
                trackMeasures.withLock { $0[plan.id] = (duration, measured.gain, measured.peak) }
            } else {
                let (album, members) = albumList[index - plans.count]
                let measured = try FFmpeg.replayGain(of: members.map(path))
                albumMeasures.withLock { $0[album] = measured }
            }
        }
        log?("measured ReplayGain in \(elapsed(since: started))")

        let trackResults = trackMeasures.withLock { $0 }
        let albumResults = albumMeasures.withLock { $0 }
        let tracks = try plans.map { plan -> CatalogTrack in
            guard let track = trackResults[plan.id], let album = albumResults[plan.album] else {
                throw OriginError(description: "no measurement for \(plan.id)")
            }
            return CatalogTrack(
                id: plan.id, title: plan.title, artist: DemoLineup.artist, album: plan.album,
                durationSeconds: track.duration, file: plan.file, codec: plan.format.rawValue,
                mimeType: plan.format.mimeType, audioQuality: plan.format.audioQuality,
                sampleRate: plan.format.sampleRate, bitDepth: plan.format.bitDepth,
                replayGain: ReplayGain(
                    trackGain: track.gain, trackPeak: track.peak,
                    albumGain: album.gain, albumPeak: album.peak))
        }
        let stations = DemoLineup.stations.map { plan in
            CatalogStation(
                id: plan.id, name: plan.name, offline: plan.offline, onExpiry: plan.onExpiry,
                validitySeconds: plan.validitySeconds, revalidateSeconds: plan.revalidateSeconds,
                trackIds: (stationTracks[plan.id] ?? []).map(\.id))
        }
        let catalog = StateDB(
            schemaVersion: StateDB.schemaVersion, complete: true,
            generatedAt: ServerClock.rfc3339(Date()), parameters: parameters,
            files: try servableFiles(), tracks: tracks, stations: stations,
            products: DemoLineup.products(trackIds: plans.map(\.id), video: hls, hlsTracks: audioHLS))
        try catalog.write(to: directory)
        log?("catalog written to \(directory.path) in \(elapsed(since: started))")
        return catalog
    }

    private func encode(_ plan: TrackPlan) throws {
        let output = directory.appendingPathComponent(plan.file).path
        var arguments = ["-y", "-f", "lavfi", "-i", plan.source, "-af", plan.filter, "-ac", "2"]
        arguments += plan.format.encoderArguments
        arguments += [
            "-metadata", "title=\(plan.title)", "-metadata", "artist=\(DemoLineup.artist)",
            "-metadata", "album=\(plan.album)", output,
        ]
        try FFmpeg.run(arguments)
    }

    /// Posters and thumbnails for the products that advertise `images`.
    private func imageJobs() -> [@Sendable () throws -> Void] {
        let images: [(String, String)] = [
            ("img/tr-1-poster.png", "testsrc2=size=600x600"), ("img/tr-1-thumb.png", "testsrc2=size=120x120"),
            ("img/vid-1-poster.png", "testsrc=size=640x360"), ("img/vid-1-thumb.png", "testsrc=size=160x90"),
        ]
        return images.map { file, source in
            let output = directory.appendingPathComponent(file).path
            return { try FFmpeg.run(["-y", "-f", "lavfi", "-i", source, "-frames:v", "1", output]) }
        }
    }

    /// Every regular file below `media/` and `img/`, hashed; these and only these are served.
    private func servableFiles() throws -> [CatalogFile] {
        var files: [CatalogFile] = []
        for folder in ["media", "img"] {
            let base = directory.appendingPathComponent(folder)
            for sub in try FileManager.default.subpathsOfDirectory(atPath: base.path).sorted() {
                let full = base.appendingPathComponent(sub).path
                let attributes = try FileManager.default.attributesOfItem(atPath: full)
                guard (attributes[.type] as? FileAttributeType) == .typeRegular else { continue }
                files.append(
                    CatalogFile(
                        path: "\(folder)/\(sub)", sizeBytes: (attributes[.size] as? NSNumber)?.intValue ?? 0,
                        sha256: try ContentKeys.sha256(ofFile: full), mimeType: MimeTypes.forPath(sub)))
            }
        }
        return files
    }

    /// Runs the jobs on all cores and rethrows the first failure after all have finished.
    private func runParallel(_ jobs: [@Sendable () throws -> Void]) throws {
        try runParallel(count: jobs.count) { try jobs[$0]() }
    }

    /// Runs `job(0)` … `job(count - 1)` on all cores and rethrows the first failure after all
    /// have finished.
    private func runParallel(count: Int, _ job: @Sendable (Int) throws -> Void) throws {
        let failures = Mutex<[Error]>([])
        DispatchQueue.concurrentPerform(iterations: count) { index in
            do { try job(index) } catch { failures.withLock { $0.append(error) } }
        }
        if let first = failures.withLock({ $0.first }) { throw first }
    }

    private func elapsed(since start: Date) -> String {
        String(format: "%.1f s", Date().timeIntervalSince(start))
    }
}

/// Content types by file extension, for the files the generator writes.
enum MimeTypes {
    static func forPath(_ path: String) -> String {
        switch (path as NSString).pathExtension.lowercased() {
        case "flac": "audio/flac"
        case "mp3": "audio/mpeg"
        case "m4a", "mp4a": "audio/mp4"
        case "opus", "ogg": "audio/ogg"
        case "m3u8": "application/vnd.apple.mpegurl"
        case "ts": "video/mp2t"
        case "vtt": "text/vtt"
        case "png": "image/png"
        case "jpg", "jpeg": "image/jpeg"
        default: "application/octet-stream"
        }
    }
}
