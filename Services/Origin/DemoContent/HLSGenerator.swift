import Foundation

/// Builds the demo video product `vid-1`: an AES-128 encrypted HLS presentation with two
/// video variants, a cheaper audio-only variant (so "lowest variant that has video" is a
/// real choice), an alternative French audio rendition and English WebVTT subtitles.
struct HLSGenerator {
    let directory: URL
    let productId = "vid-1"
    let keyId = "k-vid-1"
    let seconds: Double

    private struct Variant {
        var name: String
        var width: Int
        var height: Int
        var videoBitrate: String
        var audioBitrate: String
    }

    private var root: String { "media/\(productId)" }

    /// Every ffmpeg invocation as an independent job, so the caller can run them in parallel.
    func jobs() throws -> [@Sendable () throws -> Void] {
        let keyInfo = try ContentKeys.writeKeyInfo(keyId: keyId, in: directory)

        let variants = [
            Variant(name: "v0", width: 320, height: 180, videoBitrate: "250k", audioBitrate: "64k"),
            Variant(name: "v1", width: 640, height: 360, videoBitrate: "700k", audioBitrate: "96k"),
        ]
        let base = directory.appendingPathComponent(root)
        let duration = String(seconds)
        let hlsArguments = { (name: String) -> [String] in
            [
                "-f", "hls", "-hls_time", "2", "-hls_playlist_type", "vod", "-hls_key_info_file", keyInfo.path,
                "-hls_segment_filename", base.appendingPathComponent("\(name)/seg%03d.ts").path,
                base.appendingPathComponent("\(name)/index.m3u8").path,
            ]
        }
        var jobs: [@Sendable () throws -> Void] = []
        for variant in variants {
            let arguments =
                [
                    "-y", "-f", "lavfi", "-i", "testsrc2=size=\(variant.width)x\(variant.height):rate=24:duration=\(duration)",
                    "-f", "lavfi", "-i", "sine=frequency=523:sample_rate=44100:duration=\(duration)",
                    "-c:v", "libx264", "-preset", "veryfast", "-profile:v", "baseline", "-pix_fmt", "yuv420p",
                    "-b:v", variant.videoBitrate, "-force_key_frames", "expr:gte(t,n_forced*2)", "-sc_threshold", "0",
                    "-c:a", "aac", "-b:a", variant.audioBitrate, "-ac", "2",
                ] + hlsArguments(variant.name)
            let folder = base.appendingPathComponent(variant.name)
            jobs.append {
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                try FFmpeg.run(arguments)
            }
        }
        for (name, frequency) in [("audio", 523), ("audio-fr", 659)] {
            let arguments =
                [
                    "-y", "-f", "lavfi", "-i", "sine=frequency=\(frequency):sample_rate=44100:duration=\(duration)",
                    "-c:a", "aac", "-b:a", "64k", "-ac", "2",
                ] + hlsArguments(name)
            let folder = base.appendingPathComponent(name)
            jobs.append {
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                try FFmpeg.run(arguments)
            }
        }
        return jobs
    }

    /// Writes the subtitle rendition and the master playlist once the variants exist, with
    /// BANDWIDTH measured from the segments actually written.
    func finish() throws -> CatalogHLS {
        let base = directory.appendingPathComponent(root)
        try writeSubtitles(into: base.appendingPathComponent("subs-en"))
        func bandwidth(_ name: String) throws -> Int {
            try HLSFolder.bandwidth(of: base.appendingPathComponent(name), seconds: seconds)
        }
        let master = """
            #EXTM3U
            #EXT-X-VERSION:4
            #EXT-X-INDEPENDENT-SEGMENTS
            #EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="English",LANGUAGE="en",DEFAULT=YES,AUTOSELECT=YES,URI="subs-en/index.m3u8"
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="English",LANGUAGE="en",DEFAULT=YES,AUTOSELECT=YES
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="Français",LANGUAGE="fr",DEFAULT=NO,AUTOSELECT=YES,URI="audio-fr/index.m3u8"
            #EXT-X-STREAM-INF:BANDWIDTH=\(try bandwidth("audio")),CODECS="mp4a.40.2"
            audio/index.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=\(try bandwidth("v0")),RESOLUTION=320x180,CODECS="avc1.42c00d,mp4a.40.2",AUDIO="aud",SUBTITLES="subs"
            v0/index.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=\(try bandwidth("v1")),RESOLUTION=640x360,CODECS="avc1.42c01e,mp4a.40.2",AUDIO="aud",SUBTITLES="subs"
            v1/index.m3u8

            """
        try master.write(to: base.appendingPathComponent("master.m3u8"), atomically: true, encoding: .utf8)
        return CatalogHLS(
            master: "\(root)/master.m3u8", keyIds: [keyId], durationSeconds: seconds,
            sizeBytes: try HLSFolder.bytes(below: base), codec: "h264", audioQuality: "HIGH")
    }

    private func writeSubtitles(into folder: URL) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let end = String(format: "%02d:%06.3f", Int(seconds) / 60, seconds.truncatingRemainder(dividingBy: 60))
        let cues = """
            WEBVTT

            00:00.000 --> \(end)
            Cassette demo video

            """
        try cues.write(to: folder.appendingPathComponent("seg000.vtt"), atomically: true, encoding: .utf8)
        let playlist = """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-TARGETDURATION:\(Int(seconds.rounded(.up)))
            #EXT-X-MEDIA-SEQUENCE:0
            #EXT-X-PLAYLIST-TYPE:VOD
            #EXTINF:\(seconds),
            seg000.vtt
            #EXT-X-ENDLIST

            """
        try playlist.write(to: folder.appendingPathComponent("index.m3u8"), atomically: true, encoding: .utf8)
    }
}
