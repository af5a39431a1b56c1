import Foundation

/// Builds a demo track delivered as HLS (a TIDAL track with `manifestType: hls`): `tr-hls`, and
/// `tr-hls-2` (other noise under the same key) that `/_control/redeliver` can put in its place:
/// an audio-only master playlist with an AES-128 encrypted AAC variant in MPEG-TS segments and
/// a lossless FLAC variant in fragmented MP4 (pink noise, so that FLAC costs more than AAC and
/// the AAC variant is the default, lowest one) (`EXT-X-MAP` init section, not encrypted: ffmpeg's
/// HLS muxer cannot encrypt fMP4).
struct HLSAudioGenerator {
    let directory: URL
    let productId: String
    let keyId = "k-tr-hls"
    /// The noise generator's seed: what tells the tracks apart.
    let seed: Int
    let seconds: Double

    private var root: String { "media/\(productId)" }
    private var base: URL { directory.appendingPathComponent(root) }

    func jobs() throws -> [@Sendable () throws -> Void] {
        let keyInfo = try ContentKeys.writeKeyInfo(keyId: keyId, in: directory)
        let base = self.base
        let source = ["-y", "-f", "lavfi", "-i", "anoisesrc=color=pink:amplitude=0.3:seed=\(seed):sample_rate=44100:duration=\(seconds)", "-ac", "2"]
        let hls = ["-f", "hls", "-hls_time", "2", "-hls_playlist_type", "vod"]
        let aac =
            source + ["-c:a", "aac", "-b:a", "96k"] + hls + [
                "-hls_key_info_file", keyInfo.path,
                "-hls_segment_filename", base.appendingPathComponent("a0/seg%03d.ts").path,
                base.appendingPathComponent("a0/index.m3u8").path,
            ]
        let flac =
            source + ["-c:a", "flac", "-sample_fmt", "s16", "-strict", "-2"] + hls + [
                "-hls_segment_type", "fmp4", "-hls_fmp4_init_filename", "init.mp4",
                "-hls_segment_filename", base.appendingPathComponent("a1/seg%03d.m4s").path,
                base.appendingPathComponent("a1/index.m3u8").path,
            ]
        return [("a0", aac), ("a1", flac)].map { name, arguments in
            {
                try FileManager.default.createDirectory(at: base.appendingPathComponent(name), withIntermediateDirectories: true)
                _ = try FFmpeg.run(arguments)
            }
        }
    }

    /// The master playlist, once both variants exist.
    func finish() throws -> CatalogHLS {
        let master = """
            #EXTM3U
            #EXT-X-VERSION:7
            #EXT-X-INDEPENDENT-SEGMENTS
            #EXT-X-STREAM-INF:BANDWIDTH=\(try HLSFolder.bandwidth(of: base.appendingPathComponent("a0"), seconds: seconds)),CODECS="mp4a.40.2"
            a0/index.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=\(try HLSFolder.bandwidth(of: base.appendingPathComponent("a1"), seconds: seconds)),CODECS="fLaC"
            a1/index.m3u8

            """
        try master.write(to: base.appendingPathComponent("master.m3u8"), atomically: true, encoding: .utf8)
        return CatalogHLS(
            master: "\(root)/master.m3u8", keyIds: [keyId], durationSeconds: seconds,
            sizeBytes: try HLSFolder.bytes(below: base), codec: "aac", audioQuality: "HIGH")
    }
}
