import ArgumentParser
import Crypto
import Foundation
import Glibc
import Synchronization

/// One synthetic offline station: `count` files of `bytes` pseudo-random bytes each
/// (`--synthetic ID=COUNTxSIZE`, e.g. `st-bench=1000x200k` or `st-big=1x1g`).
struct SyntheticStationSpec: Codable, Sendable, Equatable, ExpressibleByArgument {
    static let maxCount = 100_000
    static let maxBytes = 64 << 30

    var id: String
    var count: Int
    var bytes: Int

    init(id: String, count: Int, bytes: Int) {
        self.id = id
        self.count = count
        self.bytes = bytes
    }

    /// `ID=COUNTxSIZE`; SIZE is bytes with an optional binary suffix `k`, `m` or `g`.
    init?(argument: String) {
        guard let equals = argument.firstIndex(of: "=") else { return nil }
        let id = String(argument[..<equals])
        let shape = argument[argument.index(after: equals)...].lowercased()
        let parts = shape.split(separator: "x", maxSplits: 1)
        guard parts.count == 2, let count = Int(parts[0]) else { return nil }
        var digits = parts[1]
        var unit = 1
        switch digits.last {
        case "k": unit = 1 << 10
        case "m": unit = 1 << 20
        case "g": unit = 1 << 30
        default: break
        }
        if unit > 1 { digits = digits.dropLast() }
        guard let number = Int(digits), number > 0, number <= Self.maxBytes / unit else { return nil }
        let isPlainId =
            (1...100).contains(id.utf8.count)
            && id.utf8.allSatisfy { $0 == 0x2D || $0 == 0x5F || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }
        guard isPlainId, (1...Self.maxCount).contains(count) else { return nil }
        self.init(id: id, count: count, bytes: number * unit)
    }

    /// Track ids `ID-0001`, `ID-0002`, … (as wide as the count needs, at least 4 digits).
    func trackId(_ index: Int) -> String {
        let width = max(4, String(count).count)
        let number = String(index + 1)
        return "\(id)-" + String(repeating: "0", count: max(0, width - number.count)) + number
    }
}

/// Builds a catalog of synthetic stations only, without ffmpeg: random bytes whose size and
/// SHA-256 are recorded like any media file's. It exists for the download benchmark (a
/// thousand small files, or one of a gigabyte) and for tests that need many or large files;
/// the content is not audio and no player should try to decode it.
///
/// The bytes come from a SplitMix64 stream seeded by the track id, so regenerating gives the
/// same files (and the same hashes) and the content does not compress.
struct SyntheticCatalog {
    let directory: URL
    let parameters: GenerationParameters
    var log: (@Sendable (String) -> Void)?

    /// Nominal bit rate used to give each file a duration (320 kbit/s), so `targetMinutes` works.
    static let nominalBytesPerSecond = 40_000.0

    func generate() throws -> StateDB {
        let started = Date()
        let specs = parameters.synthetic ?? []
        let folder = directory.appendingPathComponent("media/synthetic")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let jobs = specs.flatMap { spec in (0..<spec.count).map { (spec, $0) } }
        let files = Mutex<[String: CatalogFile]>([:])
        let failures = Mutex<[Error]>([])
        let directory = self.directory
        DispatchQueue.concurrentPerform(iterations: jobs.count) { index in
            let (spec, number) = jobs[index]
            let id = spec.trackId(number)
            let relative = "media/synthetic/\(id).bin"
            do {
                let sha = try Self.write(directory.appendingPathComponent(relative).path, bytes: spec.bytes, seed: id)
                files.withLock {
                    $0[id] = CatalogFile(path: relative, sizeBytes: spec.bytes, sha256: sha, mimeType: "application/octet-stream")
                }
            } catch {
                failures.withLock { $0.append(error) }
            }
        }
        if let first = failures.withLock({ $0.first }) { throw first }
        let written = files.withLock { $0 }
        log?("generated \(jobs.count) synthetic files in \(String(format: "%.1f s", Date().timeIntervalSince(started)))")

        var tracks: [CatalogTrack] = []
        var stations: [CatalogStation] = []
        for spec in specs {
            let ids = (0..<spec.count).map(spec.trackId)
            for id in ids {
                tracks.append(
                    CatalogTrack(
                        id: id, title: "Synthetic \(id)", artist: "Cassette Synthetic", album: spec.id,
                        durationSeconds: Double(spec.bytes) / Self.nominalBytesPerSecond, file: "media/synthetic/\(id).bin",
                        codec: "none", mimeType: "application/octet-stream", audioQuality: "HIGH", sampleRate: 44_100,
                        bitDepth: nil, replayGain: ReplayGain(trackGain: 0, trackPeak: 1, albumGain: 0, albumPeak: 1)))
            }
            stations.append(
                CatalogStation(
                    id: spec.id, name: "Synthetic \(spec.id)", offline: true, onExpiry: .delete,
                    validitySeconds: 86_400, revalidateSeconds: 3_600, trackIds: ids))
        }
        let products = tracks.map { track in
            CatalogProduct(
                id: track.id, productType: "TRACK", trackId: track.id, hls: nil, canBeDownloaded: true,
                refusal: nil, offlineValiditySeconds: 30 * 86_400, revalidateSeconds: 86_400,
                licenseSecurityToken: nil, poster: nil, thumbnail: nil)
        }
        let catalog = StateDB(
            schemaVersion: StateDB.schemaVersion, complete: true, generatedAt: ServerClock.rfc3339(Date()),
            parameters: parameters, files: tracks.compactMap { written[$0.id] }, tracks: tracks,
            stations: stations, products: products)
        try catalog.write(to: directory)
        log?("synthetic catalog written to \(directory.path)")
        return catalog
    }

    /// Writes `bytes` pseudo-random bytes to `path` and returns their hex SHA-256.
    static func write(_ path: String, bytes: Int, seed: String) throws -> String {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw OriginError(description: "cannot create \(path): errno \(errno)") }
        defer { close(fd) }
        // FNV-1a of the id seeds the stream.
        var state: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in seed.utf8 { state = (state ^ UInt64(byte)) &* 0x100_0000_01b3 }
        var hasher = SHA256()
        let words = 1 << 17 // 1 MiB per write
        var buffer = [UInt64](repeating: 0, count: words)
        var left = bytes
        while left > 0 {
            let chunk = min(left, words * 8)
            buffer.withUnsafeMutableBufferPointer { words in
                for i in 0..<((chunk + 7) / 8) {
                    state &+= 0x9e37_79b9_7f4a_7c15
                    var z = state
                    z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
                    z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
                    words[i] = z ^ (z >> 31)
                }
            }
            try buffer.withUnsafeBytes { raw in
                let slice = UnsafeRawBufferPointer(rebasing: raw[0..<chunk])
                hasher.update(bufferPointer: slice)
                var offset = 0
                while offset < chunk {
                    let n = Glibc.write(fd, slice.baseAddress! + offset, chunk - offset)
                    if n < 0 && errno == EINTR { continue }
                    guard n > 0 else { throw OriginError(description: "cannot write \(path): errno \(errno)") }
                    offset += n
                }
            }
            left -= chunk
        }
        return ContentKeys.hex(Array(hasher.finalize()))
    }
}
