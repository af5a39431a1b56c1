import Foundation
import GRDB
import Wire
import XCTest

@testable import StateDB

/// How a fixture track is encoded: the two kinds the reference origin's demo stations mix,
/// AAC at 44.1 kHz and Opus (always 48 kHz), so a station changes the device's rate.
struct EncodedFormat: Sendable {
    var ext: String
    var codec: String
    var sampleRate: Int
    var encoder: [String]

    static let aac44 = EncodedFormat(ext: "m4a", codec: "aac", sampleRate: 44_100, encoder: ["-c:a", "aac", "-b:a", "128k"])
    static let opus48 = EncodedFormat(ext: "opus", codec: "opus", sampleRate: 48_000, encoder: ["-c:a", "libopus", "-b:a", "96k"])
}

/// One row of `playerPlays`, its body read back.
struct StoredPlay {
    var state: String
    var productId: String
    var startPosition: Double
    var endPosition: Double
}

extension PlayerHarness {
    /// A stereo tone of `seconds` at the format's rate, encoded by ffmpeg under media/tracks/.
    func makeTrack(_ id: String, seconds: Double, frequency: Int, format: EncodedFormat) throws -> String {
        let relative = "tracks/\(id).\(format.ext)"
        try GaplessAlbum.ffmpeg(
            [
                "-f", "lavfi", "-i", "sine=frequency=\(frequency):duration=\(seconds):sample_rate=\(format.sampleRate)",
                "-ac", "2",
            ] + format.encoder + [mediaDir + "/" + relative])
        return relative
    }

    /// Makes the catalog say what the file of `id` is, as the downloader stores it from the manifest.
    func describe(_ id: String, format: EncodedFormat, seconds: Double) throws {
        try catalog.pool.write { db in
            try db.execute(
                sql: "UPDATE mediaItems SET codec = ?, sampleRate = ?, durationSeconds = ?, audioQuality = 'HIGH' WHERE id = ?",
                arguments: [format.codec, format.sampleRate, seconds, id])
        }
    }

    /// Seconds of audio the player decodes from `relative` (16-bit stereo at `rate`): where a
    /// play of it that reached its end ends.
    func decodedSeconds(_ relative: String, rate: Int) throws -> Double {
        Double(try decoded(relative).count / 4) / Double(rate)
    }

    /// The play events the player stored, oldest first, once `settled` holds for them (the
    /// player writes them in the background) or after `timeout`.
    func storedPlays(timeout: Double = 5, settled: ([StoredPlay]) -> Bool) async throws -> [StoredPlay] {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let plays = try await catalog.pool.read { db in
                try Row.fetchAll(db, sql: "SELECT state, body FROM playerPlays WHERE kind = 'play' ORDER BY createdAt, rowid").map { row -> StoredPlay in
                    let text: String = row["body"]
                    let body = try JSONCoding.parse(Array(text.utf8))
                    return StoredPlay(
                        state: row["state"], productId: body["productId"]?.stringValue ?? "",
                        startPosition: body["startPosition"]?.doubleValue ?? -1,
                        endPosition: body["endPosition"]?.doubleValue ?? -1)
                }
            }
            if settled(plays) || Date() > deadline { return plays }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}
