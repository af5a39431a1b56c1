import Foundation
import HLS
import TestSupport
import XCTest

/// The parser over playlists the real ffmpeg wrote — the reference origin's `vid-1` (AES-128
/// MPEG-TS variants, an alternative audio rendition, WebVTT subtitles) and an fMP4 single-file
/// presentation with `EXT-X-MAP` and `EXT-X-BYTERANGE` — and over hostile text, each refused
/// with its own error name.
final class HLSParserTests: XCTestCase {
    private func vid1(_ relative: String) throws -> String {
        let url = try OriginFixture.catalogDirectory().appendingPathComponent("media/vid-1/\(relative)")
        return try String(contentsOf: url, encoding: .utf8)
    }

    func testOriginMasterPlaylistListsVariantsAndRenditions() throws {
        guard case .master(let master) = try HLSParser.parse(try vid1("master.m3u8")) else { return XCTFail("not a master playlist") }
        XCTAssertEqual(master.variants.map(\.uri), ["audio/index.m3u8", "v0/index.m3u8", "v1/index.m3u8"])
        XCTAssertEqual(master.variants.map(\.hasVideo), [false, true, true])
        XCTAssertEqual(master.variants[1].resolution, HLSResolution(width: 320, height: 180))
        XCTAssertEqual(master.variants[2].codecs, ["avc1.42c01e", "mp4a.40.2"])
        XCTAssertEqual(master.variants[1].audioGroup, "aud")
        XCTAssertEqual(master.variants[1].subtitlesGroup, "subs")
        XCTAssertNil(master.variants[0].audioGroup)
        XCTAssertTrue(master.variants.allSatisfy { $0.bandwidth > 0 })
        XCTAssertLessThan(master.variants[1].bandwidth, master.variants[2].bandwidth)
        let audio = master.renditions(.audio, group: "aud")
        XCTAssertEqual(audio.map(\.language), ["en", "fr"])
        XCTAssertEqual(audio.map(\.isDefault), [true, false])
        XCTAssertEqual(audio.map(\.uri), [nil, "audio-fr/index.m3u8"])
        XCTAssertEqual(audio[1].name, "Français")
        let subtitles = master.renditions(.subtitles, group: "subs")
        XCTAssertEqual(subtitles.map(\.uri), ["subs-en/index.m3u8"])
        XCTAssertTrue(master.independentSegments)
    }

    func testOriginMediaPlaylistsListEncryptedSegments() throws {
        for name in ["v0", "v1", "audio", "audio-fr"] {
            guard case .media(let media) = try HLSParser.parse(try vid1("\(name)/index.m3u8")) else { return XCTFail("\(name): not media") }
            XCTAssertTrue(media.hasEndList, name)
            XCTAssertEqual(media.playlistType, "VOD", name)
            XCTAssertGreaterThanOrEqual(media.segments.count, 2, name)
            XCTAssertEqual(media.segments.first?.uri, "seg000.ts", name)
            XCTAssertEqual(media.segments.map(\.sequence), Array(0..<media.segments.count), name)
            XCTAssertTrue(media.segments.allSatisfy { $0.key?.method == .aes128 && $0.key?.uri == "/v1/keys/k-vid-1" }, name)
            XCTAssertEqual(media.segments.first?.key?.iv?.count, 16, name)
            XCTAssertEqual(media.keyURIs, ["/v1/keys/k-vid-1"], name)
            XCTAssertEqual(media.resources.count, media.segments.count, name)
            XCTAssertTrue(media.resources.allSatisfy { $0.rangeEnd == nil }, name)
            XCTAssertGreaterThan(media.totalDuration, 3.5, name)
        }
        guard case .media(let subtitles) = try HLSParser.parse(try vid1("subs-en/index.m3u8")) else { return XCTFail("subs: not media") }
        XCTAssertEqual(subtitles.segments.map(\.uri), ["seg000.vtt"])
        XCTAssertNil(subtitles.segments[0].key)
    }

    func testFFmpegFragmentedMP4WithMapAndByteRanges() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hlsp-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=24:duration=3",
            "-c:v", "libx264", "-preset", "veryfast", "-g", "24", "-f", "hls", "-hls_time", "1",
            "-hls_playlist_type", "vod", "-hls_segment_type", "fmp4", "-hls_flags", "single_file",
            folder.appendingPathComponent("out.m3u8").path,
        ]
        try process.run()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
        let bytes = try Array(Data(contentsOf: folder.appendingPathComponent("out.m3u8")))
        guard case .media(let media) = try HLSParser.parse(bytes) else { return XCTFail("not media") }
        XCTAssertEqual(media.segments.count, 3)
        let map = try XCTUnwrap(media.segments.first?.map)
        XCTAssertEqual(map.uri, "out.m4s")
        XCTAssertEqual(map.byteRange?.offset, 0)
        // The ranges tile the file after the init section: each starts where the last ended.
        var next = try XCTUnwrap(map.byteRange).length
        for segment in media.segments {
            let range = try XCTUnwrap(segment.byteRange)
            XCTAssertEqual(range.offset, next)
            next = range.offset + range.length
        }
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent("out.m4s").path)[.size] as? NSNumber)
        XCTAssertEqual(media.resources, [HLSResource(uri: "out.m4s", rangeEnd: size.int64Value)], "one resource, read to its end")
    }

    func testByteRangeWithoutOffsetContinuesTheLastRange() throws {
        let text = """
            #EXTM3U
            #EXT-X-TARGETDURATION:2
            #EXTINF:2,
            #EXT-X-BYTERANGE:100@50
            all.ts
            #EXTINF:2,
            #EXT-X-BYTERANGE:70
            all.ts
            #EXT-X-ENDLIST
            """
        guard case .media(let media) = try HLSParser.parse(text) else { return XCTFail("not media") }
        XCTAssertEqual(media.segments.map(\.byteRange), [HLSByteRange(length: 100, offset: 50), HLSByteRange(length: 70, offset: 150)])
        XCTAssertEqual(media.resources, [HLSResource(uri: "all.ts", rangeEnd: 220)])
    }

    /// Each hostile playlist is refused with the name that says what is wrong with it.
    func testHostilePlaylistsAreRefusedByName() {
        let cases: [(String, HLSError.Code)] = [
            ("", .missingHeader),
            ("#EXT-X-VERSION:3\n#EXTM3U\n", .missingHeader),
            ("\u{FEFF}#EXTM3U\n#EXT-X-TARGETDURATION:2\n", .missingHeader),
            ("#EXTM3U\n", .emptyPlaylist),
            ("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n", .missingURI),
            ("#EXTM3U\n#EXT-X-STREAM-INF:RESOLUTION=1x1\nv.m3u8\n", .missingAttribute),
            ("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=-5\nv.m3u8\n", .badValue),
            ("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1,RESOLUTION=wide\nv.m3u8\n", .badValue),
            ("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1,CODECS=\"avc1\nv.m3u8\n", .badAttributeList),
            ("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1,BANDWIDTH=2\nv.m3u8\n", .badAttributeList),
            ("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1,\nv.m3u8\n", .badAttributeList),
            ("#EXTM3U\n#EXT-X-STREAM-INF:bandwidth=1\nv.m3u8\n", .badAttributeList),
            ("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1,AUDIO=\"nope\"\nv.m3u8\n", .unknownGroup),
            ("#EXTM3U\n#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID=\"s\",NAME=\"x\"\n#EXT-X-STREAM-INF:BANDWIDTH=1\nv.m3u8\n", .missingAttribute),
            ("#EXTM3U\n#EXT-X-MEDIA:TYPE=SOUND,GROUP-ID=\"s\",NAME=\"x\"\n#EXT-X-STREAM-INF:BANDWIDTH=1\nv.m3u8\n", .badValue),
            ("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nv.m3u8\n#EXTINF:2,\ns.ts\n", .mixedPlaylist),
            ("#EXTM3U\nstray.ts\n", .unexpectedURI),
            ("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nhas space.m3u8\n", .unexpectedURI),
            ("#EXTM3U\n#EXTINF:2,\na.ts\n", .badTargetDuration),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:9.5,\na.ts\n", .badTargetDuration),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-TARGETDURATION:3\n", .duplicateTag),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:abc,\na.ts\n", .badValue),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:-1,\na.ts\n", .badValue),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\n", .missingURI),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\n#EXTINF:2,\na.ts\n", .missingURI),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-BYTERANGE:10\n#EXTINF:2,\na.ts\n", .badByteRange),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-BYTERANGE:0@0\n#EXTINF:2,\na.ts\n", .badByteRange),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-KEY:METHOD=AES-128\n", .missingAttribute),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-KEY:METHOD=ROT13,URI=\"k\"\n", .badValue),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-KEY:METHOD=AES-128,URI=\"k\",IV=0x12\n", .badValue),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-KEY:METHOD=NONE,URI=\"k\"\n", .badValue),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-MAP:URI=\"i.mp4\",BYTERANGE=\"10\"\n", .badByteRange),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-ENDLIST\n#EXT-X-ENDLIST\n", .duplicateTag),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\u{07}\na.ts\n", .badEncoding),
        ]
        for (text, code) in cases {
            XCTAssertThrowsError(try HLSParser.parse(text), text.debugDescription) { error in
                XCTAssertEqual((error as? HLSError)?.code, code, "\(text.debugDescription): \(error)")
                XCTAssertEqual((error as? HLSError)?.name.hasPrefix("HLS"), true)
            }
        }
        XCTAssertThrowsError(try HLSParser.parse([0x23, 0x45, 0xff, 0xfe])) { XCTAssertEqual(($0 as? HLSError)?.code, .badEncoding) }
        let huge = [UInt8](repeating: 0x23, count: HLSLimits.maxPlaylistBytes + 1)
        XCTAssertThrowsError(try HLSParser.parse(huge)) { XCTAssertEqual(($0 as? HLSError)?.code, .tooLarge) }
    }

    func testUnknownTagsAndCommentsAreIgnoredAndCRLFAccepted() throws {
        let text = "#EXTM3U\r\n# a comment\r\n#EXT-X-FUTURE-TAG:X=1\r\n#EXT-X-TARGETDURATION:4\r\n#EXTINF:3.96,\r\na.ts\r\n#EXT-X-ENDLIST\r\n"
        guard case .media(let media) = try HLSParser.parse(text) else { return XCTFail("not media") }
        XCTAssertEqual(media.segments.map(\.uri), ["a.ts"])
        XCTAssertEqual(media.segments[0].duration, 3.96)
    }

    func testURLsResolveAgainstThePlaylist() {
        let base = "http://127.0.0.1:8080/media/vid-1/master.m3u8?sig=1"
        XCTAssertEqual(HLSURL.resolve("v0/index.m3u8", against: base), "http://127.0.0.1:8080/media/vid-1/v0/index.m3u8")
        XCTAssertEqual(HLSURL.resolve("../x/a.ts?t=2", against: base), "http://127.0.0.1:8080/media/x/a.ts?t=2")
        XCTAssertEqual(HLSURL.resolve("/v1/keys/k-vid-1", against: base), "http://127.0.0.1:8080/v1/keys/k-vid-1")
        XCTAssertEqual(HLSURL.resolve("../../../../etc/passwd", against: base), "http://127.0.0.1:8080/etc/passwd")
        XCTAssertEqual(HLSURL.resolve("//other.example/a.ts", against: base), "http://other.example/a.ts")
        XCTAssertEqual(HLSURL.resolve("https://cdn.example/a.ts", against: base), "https://cdn.example/a.ts")
        XCTAssertEqual(HLSURL.path(of: "http://h:1/media/a.ts?x=1#f"), "/media/a.ts")
        XCTAssertEqual(HLSURL.resolve("v0/index.m3u8", against: "/media/vid-1/master.m3u8?sig=2"), "/media/vid-1/v0/index.m3u8")
        XCTAssertEqual(HLSURL.resolve("../a.ts", against: "/media/vid-1/v0/index.m3u8"), "/media/vid-1/a.ts")
        XCTAssertEqual(HLSURL.resolve("/v1/keys/k", against: "/media/vid-1/v0/index.m3u8"), "/v1/keys/k")
        XCTAssertNil(HLSURL.resolve("//other/a.ts", against: "/media/vid-1/v0/index.m3u8"))
        XCTAssertNil(HLSURL.resolve("a.ts", against: "media/vid-1/v0/index.m3u8"))
    }

    func testRewriterMapsEveryURIAndTruncatesAGrowingPresentation() throws {
        let master = try vid1("master.m3u8")
        let (local, _) = HLSRewriter.rewrite(master) { uri, kind in
            switch kind {
            case .variant: uri == "v0/index.m3u8" ? "/p/vid-1/v0/index.m3u8" : nil
            case .rendition: uri == "subs-en/index.m3u8" ? nil : "/p/vid-1/\(uri)"
            default: uri
            }
        }
        guard case .master(let parsed) = try HLSParser.parse(local) else { return XCTFail("not a master playlist") }
        XCTAssertEqual(parsed.variants.map(\.uri), ["/p/vid-1/v0/index.m3u8"])
        XCTAssertEqual(parsed.renditions.compactMap(\.uri), ["/p/vid-1/audio-fr/index.m3u8"])
        XCTAssertNil(parsed.variants[0].subtitlesGroup, "a variant names no group that lost every rendition")
        XCTAssertEqual(parsed.variants[0].audioGroup, "aud")

        let media = try vid1("v0/index.m3u8")
        let full = HLSRewriter.rewrite(media) { uri, kind in kind == .key ? "/p/vid-1/keys/k-vid-1" : "/p/vid-1/v0/\(uri)" }
        XCTAssertFalse(full.truncated)
        guard case .media(let all) = try HLSParser.parse(full.text) else { return XCTFail("not media") }
        XCTAssertTrue(all.hasEndList)
        XCTAssertTrue(all.segments.allSatisfy { $0.uri.hasPrefix("/p/vid-1/v0/seg") && $0.key?.uri == "/p/vid-1/keys/k-vid-1" })
        let growing = HLSRewriter.rewrite(media) { uri, kind in kind == .segment && uri != "seg000.ts" ? nil : uri }
        XCTAssertTrue(growing.truncated)
        guard case .media(let part) = try HLSParser.parse(growing.text) else { return XCTFail("not media") }
        XCTAssertFalse(part.hasEndList)
        XCTAssertEqual(part.segments.map(\.uri), ["seg000.ts"])
    }
}
